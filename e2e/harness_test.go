package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// bin holds the binaries built once for the whole package.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tollgate-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "../cmd/tollgate", "../cmd/mockllm")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: building the binaries failed:", err)
		os.Exit(1)
	}
	bin = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

const adminKey = "tga-e2e-admin-secret-0123456789abcdefghijklmnop"

// system is a running mockllm + `tollgate run` pair.
type system struct {
	t        *testing.T
	dir      string
	mockURL  string
	url      string // data plane, e.g. http://127.0.0.1:PORT
	admin    string
	demoKey  string
	tollgate *exec.Cmd
	logs     *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startProcess runs a binary until the test ends (SIGTERM, then SIGKILL after
// 15 s); done is closed when it exits.
func startProcess(t *testing.T, out io.Writer, env []string, name string, args ...string) (cmd *exec.Cmd, done <-chan struct{}) {
	t.Helper()
	cmd = exec.Command(filepath.Join(bin, name), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	return cmd, exited
}

// startSystem starts mockllm (with the given extra flags) and tollgate run with
// the demo model, and waits until the demo key is served.
func startSystem(t *testing.T, mockFlags ...string) *system {
	t.Helper()
	s := &system{t: t, dir: t.TempDir(), logs: &lockedBuffer{}}
	mockAddr := testenv.FreeAddr(t)
	_, mockDone := startProcess(t, s.logs, nil, "mockllm", append([]string{"--listen", mockAddr}, mockFlags...)...)
	s.mockURL = "http://" + mockAddr
	listen, adminAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	s.url, s.admin = "http://"+listen, adminAddr
	var tollgateDone <-chan struct{}
	s.tollgate, tollgateDone = startProcess(t, s.logs, []string{"TOLLGATE_ADMIN_KEY=" + adminKey}, "tollgate", "run",
		"--db", filepath.Join(s.dir, "tollgate.db"),
		"--listen", listen, "--admin-addr", adminAddr,
		"--xds-addr", testenv.FreeAddr(t), "--extproc-addr", testenv.FreeAddr(t), "--metrics-addr", testenv.FreeAddr(t),
		"--demo-upstream", s.mockURL, "--log-level", "warn")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process output:\n%s", s.logs.String())
		}
	})

	deadline := time.Now().Add(60 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(s.dir, ".tollgate-demo-key")); err == nil {
			s.demoKey = strings.TrimSpace(string(b))
			if code, _ := s.get("/v1/models", s.demoKey); code == http.StatusOK {
				break
			}
		}
		select {
		case <-tollgateDone:
			t.Fatalf("tollgate exited before serving the demo key:\n%s", s.logs.String())
		case <-mockDone:
			t.Fatalf("mockllm exited:\n%s", s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tollgate did not serve the demo key within 60s:\n%s", s.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	return s
}

func (s *system) get(path, key string) (int, []byte) {
	req, err := http.NewRequest(http.MethodGet, s.url+path, nil)
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (s *system) post(key, path, body string, headers ...string) (int, http.Header, []byte) {
	s.t.Helper()
	return s.postTo(s.url, key, path, body, headers...)
}

// postTo is post to the data plane at url (a replica's, in a cluster).
func (s *system) postTo(url, key, path, body string, headers ...string) (int, http.Header, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	require.NoError(s.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, resp.Header, b
}

// cli runs `tollgate ARGS -o json` against the admin API and decodes its output.
func (s *system) cli(out any, env []string, args ...string) {
	s.t.Helper()
	cmd := exec.Command(filepath.Join(bin, "tollgate"), append(args, "-o", "json")...)
	cmd.Env = append(os.Environ(), append([]string{"TOLLGATE_ADDR=" + s.admin, "TOLLGATE_ADMIN_KEY=" + adminKey}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(s.t, cmd.Run(), "tollgate %v: %s", args, stderr.String())
	if out != nil {
		require.NoError(s.t, json.Unmarshal(stdout.Bytes(), out), "tollgate %v printed %s", args, stdout.String())
	}
}

// createKey makes a key with the CLI and returns its id and secret.
func (s *system) createKey(args ...string) (id, secret string) {
	s.t.Helper()
	var out struct {
		Key struct {
			ID string `json:"id"`
		} `json:"key"`
		Secret string `json:"secret"`
	}
	s.cli(&out, nil, append([]string{"key", "create"}, args...)...)
	require.NotEmpty(s.t, out.Secret)
	return out.Key.ID, out.Secret
}

// waitKey polls until the key is accepted by the data plane (propagation).
func (s *system) waitKey(secret string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		code, _ := s.get("/v1/models", secret)
		return code == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
}

// ledgerRow is one row of `tollgate spend logs -o json`.
type ledgerRow struct {
	RequestID string `json:"request_id"`
	KeyID     string `json:"key_id"`
	Model     string `json:"model"`
	Usage     struct {
		Input       int64 `json:"input,string"`
		CachedInput int64 `json:"cached_input,string"`
		CacheWrite  int64 `json:"cache_write,string"`
		Output      int64 `json:"output,string"`
		Reasoning   int64 `json:"reasoning,string"`
	} `json:"usage"`
	Cost struct {
		NanoUSD int64  `json:"nano_usd,string"`
		Dollars string `json:"dollars"`
	} `json:"cost"`
	Deployment string `json:"deployment"`
	// Unit and Quantity of a row charged per unit ("" for tokens).
	Unit       string `json:"unit"`
	Quantity   int64  `json:"quantity,string"`
	Status     string `json:"status"`
	HTTPStatus int    `json:"http_status"`
	Stream     bool   `json:"stream"`
}

func (s *system) ledger(keyID string) []ledgerRow {
	s.t.Helper()
	var out struct {
		Entries []ledgerRow `json:"entries"`
	}
	s.cli(&out, nil, "spend", "logs", "--key", keyID)
	return out.Entries
}

// mockStats reads mockllm's bill.
type mockUsage struct {
	Requests     int64 `json:"requests"`
	Errors       int64 `json:"errors"`
	Aborted      int64 `json:"aborted"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	CachedTokens int64 `json:"cached_tokens"`
	Images       int64 `json:"images"` // the routes billed per unit
}

func (s *system) mockStats() map[string]mockUsage {
	s.t.Helper()
	resp, err := http.Get(s.mockURL + "/stats")
	require.NoError(s.t, err)
	defer resp.Body.Close()
	var st struct {
		Keys map[string]mockUsage `json:"keys"`
	}
	require.NoError(s.t, json.NewDecoder(resp.Body).Decode(&st))
	return st.Keys
}

// node runs one scenario of a Node script and decodes its JSON line.
func (s *system) node(script, scenario, key string, out any, env ...string) {
	s.t.Helper()
	nodeBin := testenv.Node(s.t)
	testenv.NodePackage(s.t, "openai")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin, script, scenario)
	cmd.Env = append(os.Environ(), append([]string{"TOLLGATE_URL=" + s.url, "TOLLGATE_KEY=" + key}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(s.t, cmd.Run(), "node %s %s: %s", script, scenario, stderr.String())
	line := lastLine(stdout.String())
	require.NoError(s.t, json.Unmarshal([]byte(line), out), "node %s %s printed %q (stderr %s)", script, scenario, stdout.String(), stderr.String())
}

func lastLine(s string) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	return last
}

// rss returns the resident set size and its peak (kB) of a process.
func rss(t *testing.T, pid int) (cur, peak int64) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		var v int64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &v); err == nil {
			cur = v
		}
		if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &v); err == nil {
			peak = v
		}
	}
	return cur, peak
}
