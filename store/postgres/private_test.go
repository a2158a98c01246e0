package postgres_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// privatePostgres is a PostgreSQL server owned by one test, so the test may
// stop and start it.
type privatePostgres struct {
	bin, dir string
	port     int
	url      string
	asRoot   bool
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func startPrivatePostgres(t testing.TB) *privatePostgres {
	t.Helper()
	testenv.Postgres(t) // skip or fail the same way as the shared server
	bin := os.Getenv("TOLLGATE_TEST_PG_BIN")
	if bin == "" {
		if testenv.CI() {
			t.Fatal("TOLLGATE_TEST_PG_BIN is required under CI=true")
		}
		t.Skip("TOLLGATE_TEST_PG_BIN unset")
	}
	p := &privatePostgres{bin: bin, dir: t.TempDir(), port: freePort(t), asRoot: os.Geteuid() == 0}
	data := filepath.Join(p.dir, "data")
	if p.asRoot {
		require.NoError(t, os.Chmod(filepath.Dir(p.dir), 0o755)) // t.TempDir's parent is 0700
		require.NoError(t, os.Chmod(p.dir, 0o755))
		out, err := exec.Command("chown", "-R", "postgres", p.dir).CombinedOutput()
		require.NoError(t, err, string(out))
	}
	p.run(t, "initdb", "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	p.start(t)
	t.Cleanup(func() { p.stopQuiet() })
	p.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
	return p
}

func (p *privatePostgres) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	if p.asRoot {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (p *privatePostgres) run(t testing.TB, name string, args ...string) {
	t.Helper()
	out, err := p.cmd(name, args...).CombinedOutput()
	require.NoError(t, err, string(out))
}

func (p *privatePostgres) start(t testing.TB) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", filepath.Join(p.dir, "data"), "-l", filepath.Join(p.dir, "pg.log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=100", p.port, p.dir), "start")
}

func (p *privatePostgres) stop(t testing.TB) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "immediate", "-w", "stop")
}

func (p *privatePostgres) stopQuiet() {
	_ = p.cmd("pg_ctl", "-D", filepath.Join(p.dir, "data"), "-m", "immediate", "-w", "stop").Run()
}
