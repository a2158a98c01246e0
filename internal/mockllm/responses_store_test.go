package mockllm

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// do sends a bodiless request with the key.
func (h *harness) do(method, path, key string) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, nil)
	require.NoError(h.t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := h.client.Do(req)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func TestResponsesKept(t *testing.T) {
	h := start(t, testConfig())
	a := decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "one two"}, "Authorization", "Bearer k1"), http.StatusOK)
	b := decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "three"}, "Authorization", "Bearer k1"), http.StatusOK)
	id := a["id"].(string)
	require.NotEqual(t, id, b["id"], "every response has its own id")

	got := decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+id, "k1"), http.StatusOK)
	require.Equal(t, a, got)
	decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+id, "k2"), http.StatusNotFound) // another key
	items := decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+id+"/input_items", "k1"), http.StatusOK)
	require.Len(t, items["data"], 1)
	require.Equal(t, "one two", items["data"].([]any)[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"])

	// A chain: previous_response_id must be one of the key's.
	c := decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "more", "previous_response_id": id}, "Authorization", "Bearer k1"), http.StatusOK)
	require.Equal(t, id, c["previous_response_id"])
	decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "more", "previous_response_id": id}, "Authorization", "Bearer k2"), http.StatusNotFound)

	del := decodeJSON(t, h.do(http.MethodDelete, "/v1/responses/"+id, "k1"), http.StatusOK)
	require.Equal(t, true, del["deleted"])
	decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+id, "k1"), http.StatusNotFound)

	// store: false keeps nothing.
	n := decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "x", "store": false}, "Authorization", "Bearer k1"), http.StatusOK)
	decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+n["id"].(string), "k1"), http.StatusNotFound)
}

func TestResponsesBackground(t *testing.T) {
	h := start(t, testConfig())
	q := decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "one two", "background": true}, "Authorization", "Bearer k1"), http.StatusOK)
	require.Equal(t, "queued", q["status"])
	require.Nil(t, q["usage"])
	require.Equal(t, Usage{Requests: 1}, h.srv.Stats().Keys["k1"], "nothing billed while queued")
	id := q["id"].(string)
	require.Equal(t, "in_progress", decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+id, "k1"), http.StatusOK)["status"])
	done := decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+id, "k1"), http.StatusOK)
	require.Equal(t, "completed", done["status"])
	require.InDelta(t, 2, done["usage"].(map[string]any)["input_tokens"], 0)
	decodeJSON(t, h.do(http.MethodGet, "/v1/responses/"+id, "k1"), http.StatusOK)
	require.Equal(t, Usage{Requests: 1, InputTokens: 2, OutputTokens: 16}, h.srv.Stats().Keys["k1"], "billed once, at completion")
	decodeJSON(t, h.do(http.MethodPost, "/v1/responses/"+id+"/cancel", "k1"), http.StatusBadRequest) // completed

	q = decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "x", "background": true}, "Authorization", "Bearer k1"), http.StatusOK)
	c := decodeJSON(t, h.do(http.MethodPost, "/v1/responses/"+q["id"].(string)+"/cancel", "k1"), http.StatusOK)
	require.Equal(t, "cancelled", c["status"])
}
