package mockllm

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// vertexToken gets an access token for email from the mock's token endpoint.
func (h *harness) vertexToken(email string) string {
	h.t.Helper()
	claims := base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"` + email + `","scope":"https://www.googleapis.com/auth/cloud-platform"}`))
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:jwt-bearer"}, "assertion": {"eyJhbGciOiJSUzI1NiJ9." + claims + ".c2ln"}}
	resp, err := h.client.Post(h.url+"/token", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	require.NoError(h.t, err)
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	require.Equal(h.t, http.StatusOK, resp.StatusCode)
	require.NoError(h.t, json.NewDecoder(resp.Body).Decode(&tok))
	require.Equal(h.t, 3600, tok.ExpiresIn)
	return tok.AccessToken
}

func TestVertexBearerAndPublishers(t *testing.T) {
	h := start(t, testConfig())
	const sa = "gateway@acme.iam.gserviceaccount.com"
	tok := h.vertexToken(sa)
	base := "/v1/projects/acme/locations/us-central1/publishers/"

	m := decodeJSON(t, h.post(base+"google/models/gemini-x:generateContent", geminiBody("hello there", 3), "Authorization", "Bearer "+tok), http.StatusOK)
	require.Equal(t, "MAX_TOKENS", m["candidates"].([]any)[0].(map[string]any)["finishReason"])

	claude := map[string]any{"anthropic_version": "vertex-2023-10-16", "max_tokens": 2, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	m = decodeJSON(t, h.post(base+"anthropic/models/claude-x@2025:rawPredict", claude, "Authorization", "Bearer "+tok), http.StatusOK)
	require.Equal(t, "claude-x@2025", m["model"])
	require.Equal(t, Usage{Requests: 2, InputTokens: 4 + 1, OutputTokens: 3 + 2}, h.srv.Stats().Keys[sa])

	m = decodeJSON(t, h.post(base+"google/models/gemini-x:generateContent", geminiBody("x", 1), "Authorization", "Bearer ya29.forged"), http.StatusUnauthorized)
	require.Equal(t, "UNAUTHENTICATED", m["error"].(map[string]any)["status"])
	claude["model"] = "claude-x"
	decodeJSON(t, h.post(base+"anthropic/models/claude-x:rawPredict", claude, "Authorization", "Bearer "+tok), http.StatusBadRequest)
	delete(claude, "model")
	claude["anthropic_version"] = "2023-06-01"
	decodeJSON(t, h.post(base+"anthropic/models/claude-x:rawPredict", claude, "Authorization", "Bearer "+tok), http.StatusBadRequest)
}
