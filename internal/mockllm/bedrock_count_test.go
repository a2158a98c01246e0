package mockllm

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBedrockCountTokens: CountTokens of a Converse input is the input
// Converse bills (system and text blocks), free; non-Anthropic models are
// refused with a ValidationException, and the signature is verified.
func TestBedrockCountTokens(t *testing.T) {
	h := start(t, testConfig())
	conv := converseBody("what is up", 0) // "sys!" + "what is up" = 14 bytes
	m := decodeJSON(t, h.bedrockPost("/model/anthropic.claude-x-v1%3A0/count-tokens", map[string]any{"input": map[string]any{"converse": conv}}, mockSecret, ""), http.StatusOK)
	require.InDelta(t, 4, m["inputTokens"], 0)
	billed := decodeJSON(t, h.bedrockPost("/model/anthropic.claude-x-v1%3A0/converse", conv, mockSecret, ""), http.StatusOK)
	require.Equal(t, m["inputTokens"], billed["usage"].(map[string]any)["inputTokens"])
	require.Equal(t, int64(4), h.srv.Stats().Keys[mockAccessKey].InputTokens, "counting is not billed")

	resp := h.bedrockPost("/model/amazon.nova-pro-v1%3A0/count-tokens", map[string]any{"input": map[string]any{"converse": conv}}, mockSecret, "")
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Equal(t, "ValidationException", resp.Header.Get("x-amzn-ErrorType"))
	resp = h.bedrockPost("/model/anthropic.claude-x-v1%3A0/count-tokens", map[string]any{"input": map[string]any{"converse": conv}}, "wrong", "")
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
}
