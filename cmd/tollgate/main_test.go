package main

import (
	"bytes"
	"context"
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

func TestRunPrintsVersionHelpAndBootstrap(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	require.NoError(t, Run(ctx, []string{"version"}, &out, &out))
	require.Contains(t, out.String(), "tollgate")

	out.Reset()
	require.NoError(t, Run(ctx, []string{"help"}, &out, &out))
	for _, want := range []string{"tollgate run", "tollgate envoy bootstrap", "tollgate key create"} {
		require.Contains(t, out.String(), want)
	}

	out.Reset()
	require.NoError(t, Run(ctx, []string{"envoy", "bootstrap", "--xds", "127.0.0.1:18000"}, &out, &out))
	require.Contains(t, out.String(), "ads_config")
	require.Contains(t, out.String(), "127.0.0.1")

	require.Error(t, Run(ctx, []string{"envoy"}, &out, &out))
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out bytes.Buffer
	dir := t.TempDir()
	err := Run(context.Background(), []string{"run", "--db", filepath.Join(dir, "t.db"), "--dataplane", "nginx"}, &out, &out)
	require.ErrorContains(t, err, "data plane")
	err = Run(context.Background(), []string{"run", "--db", filepath.Join(dir, "t.db"), "--redis", "http://x"}, &out, &out)
	require.Error(t, err)
}

// TestRunServesTheDemo is `make run` without make: the demo model and key work
// at once, and cancelling the context stops everything cleanly.
func TestRunServesTheDemo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	mock := mockllm.New(mockllm.DefaultConfig())
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = mock.Serve(ctx, ml) }()

	dir := t.TempDir()
	listen := testenv.FreeAddr(t)
	args := []string{
		"run", "--db", filepath.Join(dir, "tollgate.db"), "--listen", listen,
		"--admin-addr", testenv.FreeAddr(t), "--xds-addr", testenv.FreeAddr(t), "--extproc-addr", testenv.FreeAddr(t),
		"--metrics-addr", testenv.FreeAddr(t),
		"--demo-upstream", "http://" + ml.Addr().String(), "--log-level", "error",
	}
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- Run(ctx, args, &out, &out) }()

	var key string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, ".tollgate-demo-key"))
		key = strings.TrimSpace(string(b))
		return err == nil && strings.Contains(out.String(), "Press Ctrl-C")
	}, 30*time.Second, 50*time.Millisecond, "output: %s", out.String())
	require.Contains(t, out.String(), "Bootstrap admin key")
	require.Contains(t, out.String(), key)

	// The key is served as soon as the banner prints.
	mreq, err := http.NewRequest(http.MethodGet, "http://"+listen+"/v1/models", nil)
	require.NoError(t, err)
	mreq.Header.Set("Authorization", "Bearer "+key)
	mresp, err := http.DefaultClient.Do(mreq)
	require.NoError(t, err)
	mresp.Body.Close()
	require.Equal(t, http.StatusOK, mresp.StatusCode)

	// The route reaches the data plane over xDS within milliseconds.
	require.Eventually(t, func() bool {
		req, err := http.NewRequest(http.MethodPost, "http://"+listen+"/v1/chat/completions",
			strings.NewReader(`{"model":"demo","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			return false
		}
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("tollgate run did not stop within 30s")
	}
}
