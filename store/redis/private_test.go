package redis_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

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

// privateRedis is a Redis server owned by one test (no persistence: a restart
// loses everything, like a crash).
type privateRedis struct {
	port int
	dir  string
	cmd  *exec.Cmd
	url  string
}

func startPrivateRedis(t testing.TB) *privateRedis {
	t.Helper()
	testenv.Redis(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		if testenv.CI() {
			t.Fatal("redis-server is required under CI=true")
		}
		t.Skip("redis-server not on PATH")
	}
	r := &privateRedis{port: freePort(t), dir: t.TempDir()}
	r.url = fmt.Sprintf("redis://127.0.0.1:%d/0", r.port)
	r.start(t)
	t.Cleanup(r.stop)
	return r
}

func (r *privateRedis) start(t testing.TB) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", fmt.Sprint(r.port), "--save", "",
		"--appendonly", "no", "--dir", r.dir)
	require.NoError(t, r.cmd.Start())
	for range 100 {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port))
		if err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("private redis did not start")
}

func (r *privateRedis) stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}
