// Package testenv gives tests the real servers and tools `make test` provides
// (PostgreSQL, Redis, Node). When one is missing a test skips locally but fails
// under CI=true, so a missing dependency can never pass as green.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// CI reports whether the tests run under CI (CI=true).
func CI() bool { return os.Getenv("CI") == "true" }

// Postgres returns the URL of the throw-away PostgreSQL server.
func Postgres(t testing.TB) string {
	t.Helper()
	return need(t, "TOLLGATE_TEST_POSTGRES", "PostgreSQL")
}

// Redis returns the URL of the throw-away Redis server.
func Redis(t testing.TB) string {
	t.Helper()
	return need(t, "TOLLGATE_TEST_REDIS", "Redis")
}

// Node returns the path of the node binary.
func Node(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		missing(t, "Node.js (node on PATH)")
	}
	return p
}

// NodePackage checks that the npm package pkg is installed in ./node_modules
// (`make test` runs npm ci in the directories that need one).
func NodePackage(t testing.TB, pkg string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("node_modules", pkg)); err != nil {
		missing(t, "npm package "+pkg+" (node_modules/"+pkg+"; run `make test` or `npm ci`)")
	}
}

func need(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		missing(t, what+" ("+env+" unset; run the tests with `make test`)")
	}
	return v
}

func missing(t testing.TB, what string) {
	t.Helper()
	if CI() {
		t.Fatalf("testenv: %s is required under CI=true", what)
	}
	t.Skipf("testenv: %s not available; skipped (fails under CI=true)", what)
}

// Chromium returns the path of Debian's Chromium (`make test` installs the
// chromium package when it is missing).
func Chromium(t testing.TB) string {
	t.Helper()
	const p = "/usr/bin/chromium"
	if _, err := os.Stat(p); err != nil {
		missing(t, "Chromium ("+p+"; apt-get install chromium)")
	}
	return p
}
