package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// A whole `tollgate run --log-format json --log-level debug` log: JSON lines,
// one access line per request, and no virtual key, admin key or provider
// credential anywhere in it.
func TestRunLogsAreJSONAndHoldNoSecret(t *testing.T) {
	const adminKey = "tga-log-test-admin-secret-0123456789"
	t.Setenv("TOLLGATE_ADMIN_KEY", adminKey)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mock := mockllm.New(mockllm.DefaultConfig())
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = mock.Serve(ctx, ml) }()

	dir := t.TempDir()
	listen, metrics := testenv.FreeAddr(t), testenv.FreeAddr(t)
	args := []string{
		"run", "--db", filepath.Join(dir, "tollgate.db"), "--listen", listen,
		"--admin-addr", testenv.FreeAddr(t), "--xds-addr", testenv.FreeAddr(t), "--extproc-addr", testenv.FreeAddr(t),
		"--metrics-addr", metrics, "--demo-upstream", "http://" + ml.Addr().String(),
		"--log-format", "json", "--log-level", "debug",
	}
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, args, &stdout, &stderr) }()
	var key string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, ".tollgate-demo-key"))
		key = strings.TrimSpace(string(b))
		return err == nil && strings.Contains(stdout.String(), "Press Ctrl-C")
	}, 30*time.Second, 50*time.Millisecond, "output: %s", stderr.String())

	sent := 0
	post := func(auth, body string) int {
		req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+auth)
		req.Header.Set("x-api-key", auth)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		sent++
		return resp.StatusCode
	}
	require.Eventually(t, func() bool {
		return post(key, `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`) == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, http.StatusOK, post(key, `{"model":"demo","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	require.Equal(t, http.StatusUnauthorized, post("tg-wrong-"+key[3:], `{"model":"demo","messages":[]}`))
	code, body := httpGet(t, "http://"+metrics+"/readyz")
	require.Equal(t, http.StatusOK, code, body)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("tollgate run did not stop within 30s")
	}

	log := stderr.String()
	access := 0
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not a JSON line: %s", line)
		if rec["msg"] == "request" {
			access++
		}
	}
	require.Equal(t, sent, access, "one access line per request")
	for _, secret := range []string{key, key[3:], adminKey, "sk-demo-upstream"} {
		require.NotContains(t, log, secret)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test against a loopback server
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
