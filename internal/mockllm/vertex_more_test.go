package mockllm

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVertexPredictEmbeddings: :predict embeds each instance with its token
// count, bills their sum, and the Gemini API's embedding methods are not
// Vertex's.
func TestVertexPredictEmbeddings(t *testing.T) {
	h := start(t, testConfig())
	const sa = "embed@acme.iam.gserviceaccount.com"
	tok := h.vertexToken(sa)
	base := "/v1/projects/acme/locations/us-central1/publishers/google/models/"
	body := map[string]any{
		"instances":  []any{map[string]any{"content": "hello world"}, map[string]any{"content": "abcd"}},
		"parameters": map[string]any{"outputDimensionality": 3},
	}
	m := decodeJSON(t, h.post(base+"text-embedding-005:predict", body, "Authorization", "Bearer "+tok), http.StatusOK)
	preds := m["predictions"].([]any)
	require.Len(t, preds, 2)
	first := preds[0].(map[string]any)["embeddings"].(map[string]any)
	require.Len(t, first["values"], 3)
	require.InDelta(t, 3, first["statistics"].(map[string]any)["token_count"], 0)
	require.Equal(t, Usage{Requests: 1, InputTokens: 3 + 1}, h.srv.Stats().Keys[sa])

	decodeJSON(t, h.post(base+"text-embedding-005:batchEmbedContents", body, "Authorization", "Bearer "+tok), http.StatusNotFound)
	decodeJSON(t, h.post(base+"text-embedding-005:predict", body, "Authorization", "Bearer ya29.forged"), http.StatusUnauthorized)
}

// TestVertexClaudeCountTokens: count-tokens:rawPredict takes the model in
// the body and the Vertex version, and answers Anthropic's input_tokens,
// free.
func TestVertexClaudeCountTokens(t *testing.T) {
	h := start(t, testConfig())
	const sa = "count@acme.iam.gserviceaccount.com"
	tok := h.vertexToken(sa)
	path := "/v1/projects/acme/locations/us-central1/publishers/anthropic/models/count-tokens:rawPredict"
	body := map[string]any{
		"anthropic_version": "vertex-2023-10-16", "model": "claude-x@2025",
		"messages": []any{map[string]any{"role": "user", "content": "hello there"}},
	}
	m := decodeJSON(t, h.post(path, body, "Authorization", "Bearer "+tok), http.StatusOK)
	require.InDelta(t, 3, m["input_tokens"], 0)
	require.Zero(t, h.srv.Stats().Keys[sa].InputTokens)

	delete(body, "model")
	decodeJSON(t, h.post(path, body, "Authorization", "Bearer "+tok), http.StatusBadRequest)
	body["model"], body["anthropic_version"] = "claude-x", "2023-06-01"
	decodeJSON(t, h.post(path, body, "Authorization", "Bearer "+tok), http.StatusBadRequest)
}
