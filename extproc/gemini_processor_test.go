package extproc

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

const geminiKey = "AIzaSyGatewayProviderKeyGGGGGGGGGGGGG"

// geminiEnv is a test env with a Gemini deployment "gem" besides the OpenAI
// ones.
func geminiEnv(t *testing.T) *testEnv {
	e := newTestEnv(t)
	e.cat.targets["gem"] = &translate.Target{
		Model: "gem", Deployment: "gemini-flash", Provider: translate.ProviderGemini, BasePath: "/v1beta",
		Host: "generativelanguage.googleapis.com", APIKey: geminiKey, ProviderModel: "gemini-2.5-flash",
		Price: testPrice,
	}
	t.Cleanup(func() { require.NotContains(t, e.logs.String(), geminiKey) })
	return e
}

const geminiReplyBody = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,"cachedContentTokenCount":4,"candidatesTokenCount":3,"thoughtsTokenCount":2,"totalTokenCount":17},"modelVersion":"gemini-2.5-flash"}`

// TestGeminiAPIKeyAndSettlement: the Gemini API takes the virtual key from
// x-goog-api-key or ?key=, never passes it upstream, answers natively on a
// Gemini deployment and settles usageMetadata exactly.
func TestGeminiAPIKeyAndSettlement(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"maxOutputTokens":50}}`
	for name, req := range map[string]*extprocfiltertest.Request{
		"header": post("/v1beta/models/gem:generateContent", "", body, extprocfilter.Header{Key: "x-goog-api-key", Value: clientKey}),
		"query":  post("/v1/models/gem:generateContent?key="+clientKey, "", body),
	} {
		t.Run(name, func(t *testing.T) {
			e := geminiEnv(t)
			up := &recorder{resp: jsonResponse(200, geminiReplyBody)}
			got := e.do(t, req, up.upstream)
			require.Equal(t, 200, got.Status, string(got.Body))
			// The reply passes as the provider wrote it but for modelVersion:
			// the model the client asked for, as on every route.
			require.JSONEq(t, strings.Replace(geminiReplyBody, `"modelVersion":"gemini-2.5-flash"`, `"modelVersion":"gem"`, 1), string(got.Body))
			fwd := up.last(t)
			require.Equal(t, "/v1beta/models/gemini-2.5-flash:generateContent", fwd.Headers.Value(":path"), "no client key in the upstream path")
			require.Equal(t, geminiKey, fwd.Headers.Value("x-goog-api-key"))
			require.False(t, fwd.Headers.Has("authorization"))
			recs := e.acct.Records()
			require.Len(t, recs, 1)
			require.Equal(t, kernel.Usage{Input: 8, CachedInput: 4, Output: 3, Reasoning: 2}, recs[0].Usage)
			require.Equal(t, int64(50), e.acct.Admits()[0].MaxTokens, "maxOutputTokens bounds the reservation")
		})
	}
}

// TestGeminiAPIErrorsInGoogleShape: the gateway's own refusals on the Gemini
// API are Google-shaped errors.
func TestGeminiAPIErrorsInGoogleShape(t *testing.T) {
	e := geminiEnv(t)
	up := &recorder{resp: jsonResponse(200, geminiReplyBody)}
	for _, tc := range []struct {
		req    *extprocfiltertest.Request
		status int
		code   string
	}{
		{post("/v1beta/models/gem:generateContent", "", `{"contents":[]}`), 401, "UNAUTHENTICATED"},
		{post("/v1beta/models/gem:generateContent?key=tg-wrong", "", `{"contents":[]}`), 401, "UNAUTHENTICATED"},
		{post("/v1beta/models/nope:generateContent", clientKey, `{"contents":[]}`), 404, "NOT_FOUND"},
		{post("/v1beta/models/gem:generateContent", clientKey, `{"contents":[`), 400, "INVALID_ARGUMENT"},
	} {
		got := e.do(t, tc.req, up.upstream)
		require.Equal(t, tc.status, got.Status)
		var env struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
				Status  string `json:"status"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(got.Body, &env), string(got.Body))
		require.Equal(t, tc.status, env.Error.Code)
		require.Equal(t, tc.code, env.Error.Status)
		require.NotEmpty(t, env.Error.Message)
	}
	require.Empty(t, up.got)
}

// TestGeminiAPIStreamArrayFromOpenAI: streamGenerateContent without alt=sse on
// an OpenAI deployment is a JSON array with a JSON content type, and settles
// the usage chunk.
func TestGeminiAPIStreamArrayFromOpenAI(t *testing.T) {
	e := geminiEnv(t)
	stream := "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":1,\"total_tokens\":8}}\n\ndata: [DONE]\n\n"
	for _, size := range []int{1, 9, len(stream)} {
		up := &recorder{resp: sseResponse(stream, size)}
		got := e.do(t, post("/v1beta/models/gpt-4o:streamGenerateContent", "", `{"contents":[{"parts":[{"text":"Hi"}]}]}`,
			extprocfilter.Header{Key: "x-goog-api-key", Value: clientKey}), up.upstream)
		require.Equal(t, 200, got.Status)
		require.Contains(t, got.Headers.Value("content-type"), "application/json")
		var events []map[string]any
		require.NoError(t, json.Unmarshal(got.Body, &events), string(got.Body))
		require.Len(t, events, 2)
		require.Equal(t, "/v1/chat/completions", up.last(t).Headers.Value(":path"))
	}
	recs := e.acct.waitRecords(t, 3)
	for _, r := range recs {
		require.Equal(t, kernel.Usage{Input: 7, Output: 1}, r.Usage)
	}
}

// TestGeminiModelsList: GET /v1beta/models lists the key's models in
// models.list's shape.
func TestGeminiModelsList(t *testing.T) {
	e := geminiEnv(t)
	req := get("/v1beta/models?key="+clientKey, "")
	req.Headers = req.Headers[:4]
	got := e.do(t, req, nil)
	require.Equal(t, 200, got.Status, string(got.Body))
	var list struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	require.NoError(t, json.Unmarshal(got.Body, &list))
	require.NotEmpty(t, list.Models)
	require.Contains(t, string(got.Body), `"models/gem"`)
}
