package mockllm

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReceivedSystem: the system text of Gemini requests (systemInstruction
// parts) is kept and shown by GET /received/system; a request without one
// shows "".
func TestReceivedSystem(t *testing.T) {
	h := start(t, testConfig())
	for _, req := range []map[string]any{
		{"systemInstruction": map[string]any{"parts": []map[string]string{{"text": "Be terse."}, {"text": "Use French."}}}, "contents": []map[string]any{{"role": "user", "parts": []map[string]string{{"text": "hi"}}}}},
		{"contents": []map[string]any{{"role": "user", "parts": []map[string]string{{"text": "hi"}}}}},
	} {
		decodeJSON(t, h.post("/v1beta/models/gemini-mock:generateContent", req, "x-goog-api-key", "k1"), http.StatusOK)
	}
	resp := h.do(http.MethodGet, "/received/system", "")
	var got map[string][]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	require.Equal(t, []string{"Be terse.\nUse French.", ""}, got["gemini"])
}
