package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// handedOut are the ports FreePort returned in this process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback TCP port that was free a moment ago and that
// no earlier call in this process returned. A port handed to a child process
// stays unbound until the child binds it, and the kernel may offer it again
// meanwhile: two addresses of one test must not come out the same.
func FreePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("testenv: free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !handedOut.ports[port] {
			if handedOut.ports == nil {
				handedOut.ports = map[int]bool{}
			}
			handedOut.ports[port] = true
			return port
		}
	}
	t.Fatalf("testenv: the kernel offered only ports already handed out")
	return 0
}

// FreeAddr is FreePort as a loopback host:port.
func FreeAddr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
}

// PrivatePostgres is a PostgreSQL server owned by one test, so the test may
// stop and start it (outage tests). It is removed when the test ends.
type PrivatePostgres struct {
	URL    string
	bin    string
	dir    string
	port   int
	asRoot bool
}

// StartPostgres initialises and starts a private PostgreSQL server from the
// binaries `make test` names in TOLLGATE_TEST_PG_BIN.
func StartPostgres(t testing.TB) *PrivatePostgres {
	t.Helper()
	Postgres(t) // skip or fail the same way as the shared server
	bin := os.Getenv("TOLLGATE_TEST_PG_BIN")
	if bin == "" {
		missing(t, "TOLLGATE_TEST_PG_BIN (PostgreSQL binaries)")
	}
	p := &PrivatePostgres{bin: bin, dir: t.TempDir(), port: FreePort(t), asRoot: os.Geteuid() == 0}
	if p.asRoot { // the server refuses to run as root: hand the directory to postgres
		for _, d := range []string{filepath.Dir(p.dir), p.dir} { // t.TempDir's parent is 0700
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatalf("testenv: %v", err)
			}
		}
		if out, err := exec.Command("chown", "-R", "postgres", p.dir).CombinedOutput(); err != nil {
			t.Fatalf("testenv: chown: %v: %s", err, out)
		}
	}
	p.run(t, "initdb", "-D", filepath.Join(p.dir, "data"), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	p.Start(t)
	t.Cleanup(func() { _ = p.pgCtl("-m", "immediate", "-w", "stop").Run() })
	p.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
	return p
}

// Start starts the server (again).
func (p *PrivatePostgres) Start(t testing.TB) {
	t.Helper()
	p.run(t, "pg_ctl", "-D", filepath.Join(p.dir, "data"), "-l", filepath.Join(p.dir, "pg.log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=100", p.port, p.dir), "start")
}

// Stop stops the server at once, as a crash would.
func (p *PrivatePostgres) Stop(t testing.TB) {
	t.Helper()
	if out, err := p.pgCtl("-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
		t.Fatalf("testenv: pg_ctl stop: %v: %s", err, out)
	}
}

func (p *PrivatePostgres) pgCtl(args ...string) *exec.Cmd {
	return p.cmd("pg_ctl", append([]string{"-D", filepath.Join(p.dir, "data")}, args...)...)
}

func (p *PrivatePostgres) cmd(name string, args ...string) *exec.Cmd {
	path := filepath.Join(p.bin, name)
	if p.asRoot {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	return exec.Command(path, args...)
}

func (p *PrivatePostgres) run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := p.cmd(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("testenv: %s: %v: %s", name, err, out)
	}
}

// PrivateRedis is a Redis server owned by one test, without persistence: a
// restart loses everything, like a crash.
type PrivateRedis struct {
	URL  string
	port int
	dir  string
	cmd  *exec.Cmd
}

// StartRedis starts a private redis-server.
func StartRedis(t testing.TB) *PrivateRedis {
	t.Helper()
	Redis(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing(t, "redis-server on PATH")
	}
	r := &PrivateRedis{port: FreePort(t), dir: t.TempDir()}
	r.URL = fmt.Sprintf("redis://127.0.0.1:%d/0", r.port)
	r.Start(t)
	t.Cleanup(r.Stop)
	return r
}

// Start starts the server (again), empty.
func (r *PrivateRedis) Start(t testing.TB) {
	t.Helper()
	r.cmd = exec.Command("redis-server", "--bind", "127.0.0.1", "--port", fmt.Sprint(r.port), "--save", "",
		"--appendonly", "no", "--dir", r.dir)
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("testenv: redis-server: %v", err)
	}
	for range 100 {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", r.port))
		if err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("testenv: private redis did not start")
}

// Stop kills the server.
func (r *PrivateRedis) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}
