package mockllm

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func (h *harness) putFault(name string, f Fault) {
	h.t.Helper()
	b, err := json.Marshal(f)
	require.NoError(h.t, err)
	req, err := http.NewRequest(http.MethodPut, h.url+"/faults/"+name, bytes.NewReader(b))
	require.NoError(h.t, err)
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	_ = resp.Body.Close()
	require.Equal(h.t, http.StatusNoContent, resp.StatusCode)
}

func TestFaultsPerDeployment(t *testing.T) {
	h := start(t, testConfig())
	// A healthy deployment under its prefix serves the normal API.
	m := decodeJSON(t, h.post("/d/a/v1/chat/completions", chatBody("x", nil), "Authorization", "Bearer k"), http.StatusOK)
	require.Equal(t, "chat.completion", m["object"])

	h.putFault("b", Fault{Mode: FaultRateLimit, RetryAfter: 5})
	resp := h.post("/d/b/v1/chat/completions", chatBody("x", nil), "Authorization", "Bearer k")
	require.Equal(t, "5", resp.Header.Get("retry-after"))
	decodeJSON(t, resp, http.StatusTooManyRequests)

	h.putFault("b", Fault{Mode: FaultError500, Times: 1})
	decodeJSON(t, h.post("/d/b/v1/chat/completions", chatBody("x", nil)), http.StatusInternalServerError)
	decodeJSON(t, h.post("/d/b/v1/chat/completions", chatBody("x", nil)), http.StatusOK) // cleared itself

	h.putFault("slow", Fault{Mode: FaultSlow, DelayMS: 120})
	t0 := time.Now()
	decodeJSON(t, h.post("/d/slow/v1/chat/completions", chatBody("x", nil)), http.StatusOK)
	require.GreaterOrEqual(t, time.Since(t0), 120*time.Millisecond, "served after the delay")

	h.putFault("c", Fault{Mode: FaultContextWindow})
	m = decodeJSON(t, h.post("/d/c/v1/chat/completions", chatBody("x", nil)), http.StatusBadRequest)
	require.Equal(t, "context_length_exceeded", m["error"].(map[string]any)["code"])
	m = decodeJSON(t, h.post("/d/c/v1/messages", messagesBody("x", nil)), http.StatusBadRequest)
	require.Contains(t, m["error"].(map[string]any)["message"], "prompt is too long")

	// Per request, by header, on a deployment named by header.
	m = decodeJSON(t, h.post("/v1/chat/completions", chatBody("x", nil), "x-mock-deployment", "d", "x-mock-fault", "content_policy"), http.StatusBadRequest)
	require.Equal(t, "content_policy_violation", m["error"].(map[string]any)["code"])

	// A bare 401 / 403: no body, no content-type.
	for mode, status := range map[string]int{FaultUnauthorizedEmpty: http.StatusUnauthorized, FaultForbiddenEmpty: http.StatusForbidden} {
		resp := h.post("/v1/messages", messagesBody("x", nil), "x-mock-deployment", "e", "x-mock-fault", mode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, status, resp.StatusCode)
		require.Empty(t, b)
		require.Empty(t, resp.Header.Values("content-type"))
		require.Equal(t, "0", resp.Header.Get("content-length"))
	}

	deps := h.srv.Deployments()
	require.Equal(t, int64(1), deps["a"].Received)
	require.Equal(t, int64(3), deps["b"].Received)
	require.Equal(t, int64(2), deps["b"].Faulted)
	require.Equal(t, int64(2), deps["c"].Received)
	require.Equal(t, int64(1), deps["d"].Received)

	m = decodeJSON(t, h.get("/faults"), http.StatusOK)
	require.Equal(t, []any{"a", "b", "c", "d", "e", "slow"}, m["names"])
	req, _ := http.NewRequest(http.MethodDelete, h.url+"/faults", nil)
	resp, err := h.client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Empty(t, h.srv.Deployments())
}

func TestFaultsThatBreakTheConnection(t *testing.T) {
	h := start(t, testConfig())
	h.putFault("r", Fault{Mode: FaultRefuse})
	req, _ := http.NewRequest(http.MethodPost, h.url+"/d/r/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
	_, err := h.client.Do(req)
	require.Error(t, err, "refused: no response")

	h.putFault("s", Fault{Mode: FaultReset})
	resp := h.post("/d/s/v1/chat/completions", chatBody("a b c d", map[string]any{"stream": true}))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, err = io.ReadAll(resp.Body)
	require.Error(t, err, "the stream is cut after its first event")

	h.putFault("hang", Fault{Mode: FaultHang})
	c := &http.Client{Timeout: 100 * time.Millisecond}
	req, _ = http.NewRequest(http.MethodPost, h.url+"/d/hang/v1/chat/completions", strings.NewReader(`{}`))
	_, err = c.Do(req)
	require.Error(t, err, "hung past the client's timeout")
	require.Equal(t, int64(1), h.srv.Deployments()["hang"].Received)

	// Bad control requests are 400.
	req, _ = http.NewRequest(http.MethodPut, h.url+"/faults/x", strings.NewReader(`{"mode":"explode"}`))
	resp, err = h.client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}
