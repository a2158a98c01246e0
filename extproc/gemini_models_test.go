package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

// TestGeminiModelGet: GET /v1beta/models/{m} (and /v1/models/{m} with
// x-goog-api-key) answers models.get's object for a model the key may use,
// Google's 404 NOT_FOUND for one it may not or that does not exist; the key
// may come in ?key=. Nothing is admitted.
func TestGeminiModelGet(t *testing.T) {
	e := newTestEnv(t)
	goog := func(key string) []extprocfilter.Header {
		return []extprocfilter.Header{{Key: "x-goog-api-key", Value: key}}
	}
	do := func(path string, headers []extprocfilter.Header) (int, string) {
		req := get(path, "")
		req.Headers = append(req.Headers[:4], headers...)
		resp := e.do(t, req, nil)
		return resp.Status, string(resp.Body)
	}
	want := `{"name":"models/gpt-4o","baseModelId":"gpt-4o","displayName":"gpt-4o","supportedGenerationMethods":["generateContent","streamGenerateContent","countTokens"]}`
	for _, path := range []string{"/v1beta/models/gpt-4o", "/v1/models/gpt-4o", "/v1beta/models/models%2Fgpt-4o"} {
		status, body := do(path, goog(otherKey))
		require.Equal(t, 200, status, path)
		require.JSONEq(t, want, body, path)
	}
	status, body := do("/v1beta/models/gpt-4o?key="+otherKey, nil)
	require.Equal(t, 200, status)
	require.JSONEq(t, want, body)

	notFound := `{"error":{"code":404,"message":"models/instruct is not found for API version v1beta. Call ListModels to see the list of available models.","status":"NOT_FOUND"}}`
	status, body = do("/v1beta/models/instruct", goog(otherKey)) // exists, not allowed to this key
	require.Equal(t, 404, status)
	require.JSONEq(t, notFound, body)
	status, body = do("/v1/models/nope", goog(clientKey))
	require.Equal(t, 404, status)
	require.JSONEq(t, `{"error":{"code":404,"message":"models/nope is not found for API version v1. Call ListModels to see the list of available models.","status":"NOT_FOUND"}}`, body)
	status, body = do("/v1beta/models/gpt-4o", goog("tg-bad"))
	require.Equal(t, 401, status)
	require.Contains(t, body, `"status":"UNAUTHENTICATED"`)
	require.Empty(t, e.acct.Admits())
}

// TestGeminiModelGetRefusesMethods: a model path with a method models.get
// does not serve is Google's 404, not a model object.
func TestGeminiModelGetRefusesMethods(t *testing.T) {
	e := newTestEnv(t)
	req := get("/v1beta/models/gpt-4o:embedContent", "")
	req.Headers = append(req.Headers[:4], extprocfilter.Header{Key: "x-goog-api-key", Value: otherKey})
	resp := e.do(t, req, nil)
	require.Equal(t, 404, resp.Status)
	require.Contains(t, string(resp.Body), `"status":"NOT_FOUND"`)
}
