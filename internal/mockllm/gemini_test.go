package mockllm

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func geminiBody(text string, maxTokens int) map[string]any {
	b := map[string]any{
		"systemInstruction": map[string]any{"parts": []any{map[string]any{"text": "sys!"}}},
		"contents":          []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}},
	}
	if maxTokens > 0 {
		b["generationConfig"] = map[string]any{"maxOutputTokens": maxTokens}
	}
	return b
}

func TestGeminiGenerateJSON(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1beta/models/gemini-x:generateContent", geminiBody("what is up", 0), "x-goog-api-key", "g"), http.StatusOK)
	c := m["candidates"].([]any)[0].(map[string]any)
	require.Equal(t, "STOP", c["finishReason"])
	require.Equal(t, map[string]any{"role": "model", "parts": []any{map[string]any{"text": words("what is up", 16)}}}, c["content"])
	u := m["usageMetadata"].(map[string]any)
	// "sys!" + "what is up" = 14 bytes → 4 tokens.
	require.InDelta(t, 4, u["promptTokenCount"], 0)
	require.InDelta(t, 16, u["candidatesTokenCount"], 0)
	require.InDelta(t, 20, u["totalTokenCount"], 0)
	require.Equal(t, "gemini-x", m["modelVersion"])

	m = decodeJSON(t, h.post("/v1/models/gemini-x:generateContent?key=g", geminiBody("a", 2), "x-mock-cached-tokens", "1"), http.StatusOK)
	c = m["candidates"].([]any)[0].(map[string]any)
	require.Equal(t, "MAX_TOKENS", c["finishReason"])
	require.InDelta(t, 1, m["usageMetadata"].(map[string]any)["cachedContentTokenCount"], 0)
	require.Equal(t, Usage{Requests: 2, InputTokens: 4 + 1, CachedTokens: 1, OutputTokens: 18}, h.srv.Stats().Keys["g"])
}

func TestGeminiStreamSSE(t *testing.T) {
	cfg := testConfig()
	cfg.Chunks = 2
	h := start(t, cfg)
	resp := h.post("/v1beta/models/gemini-x:streamGenerateContent?alt=sse", geminiBody("one two three", 5), "x-goog-api-key", "g")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("content-type"))
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(raw), "\r\n\r\n"), "Google separates events with CRLF CRLF")
	evs, err := readEvents(strings.NewReader(string(raw)))
	require.NoError(t, err)
	require.Len(t, evs, 2)
	var text string
	for i, e := range evs {
		var r struct {
			Candidates []struct {
				Content struct {
					Parts []struct {
						Text string `json:"text"`
					} `json:"parts"`
				} `json:"content"`
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
			UsageMetadata struct {
				Prompt     int64 `json:"promptTokenCount"`
				Candidates int64 `json:"candidatesTokenCount"`
			} `json:"usageMetadata"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.data), &r))
		text += r.Candidates[0].Content.Parts[0].Text
		require.Equal(t, int64(5), r.UsageMetadata.Prompt, `"sys!one two three" is 17 bytes`)
		if i == 1 {
			require.Equal(t, "MAX_TOKENS", r.Candidates[0].FinishReason)
			require.Equal(t, int64(5), r.UsageMetadata.Candidates)
		} else {
			require.Empty(t, r.Candidates[0].FinishReason)
		}
	}
	require.Equal(t, "one two three one two", text)
	require.Equal(t, Usage{Requests: 1, InputTokens: 5, OutputTokens: 5}, h.srv.Stats().Keys["g"])
}

func TestGeminiStreamArrayAndToolCall(t *testing.T) {
	h := start(t, testConfig())
	body := geminiBody("weather in Paris", 0)
	body["tools"] = []any{map[string]any{"functionDeclarations": []any{map[string]any{"name": "get_weather"}}}}
	resp := h.post("/v1beta/models/gemini-x:streamGenerateContent", body, "x-goog-api-key", "g", "x-mock-tool-call", "get_weather")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("content-type"))
	var arr []struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					FunctionCall struct {
						Name string          `json:"name"`
						Args json.RawMessage `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&arr))
	require.Len(t, arr, 1)
	fc := arr[0].Candidates[0].Content.Parts[0].FunctionCall
	require.Equal(t, "get_weather", fc.Name)
	require.JSONEq(t, `{"city":"Paris"}`, string(fc.Args))
	require.Equal(t, "STOP", arr[0].Candidates[0].FinishReason)
	require.Equal(t, int64(4), h.srv.Stats().Keys["g"].OutputTokens, `{"city":"Paris"} is 16 bytes`)
}

func TestGeminiCountEmbedModelsErrors(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1beta/models/gemini-x:countTokens", map[string]any{"generateContentRequest": geminiBody("abcd", 0)}, "x-goog-api-key", "g"), http.StatusOK)
	require.InDelta(t, 2, m["totalTokens"], 0)

	m = decodeJSON(t, h.post("/v1beta/models/emb:batchEmbedContents", map[string]any{"requests": []any{
		map[string]any{"model": "models/emb", "content": map[string]any{"parts": []any{map[string]any{"text": "hello"}}}, "outputDimensionality": 3},
		map[string]any{"model": "models/emb", "content": map[string]any{"parts": []any{map[string]any{"text": "hi"}}}},
	}}, "x-goog-api-key", "g"), http.StatusOK)
	embs := m["embeddings"].([]any)
	require.Len(t, embs, 2)
	require.Len(t, embs[0].(map[string]any)["values"], 3)
	require.Len(t, embs[1].(map[string]any)["values"], 8)
	require.Equal(t, Usage{Requests: 1, InputTokens: 2 + 1}, h.srv.Stats().Keys["g"], "count_tokens is free")

	m = decodeJSON(t, h.get("/v1beta/models"), http.StatusOK)
	require.NotEmpty(t, m["models"])

	m = decodeJSON(t, h.post("/v1beta/models/gemini-x:generateContent", geminiBody("x", 0), "x-mock-status", "429"), http.StatusTooManyRequests)
	require.Equal(t, map[string]any{"error": map[string]any{"code": 429.0, "message": "injected by x-mock-status", "status": "RESOURCE_EXHAUSTED"}}, m)
	m = decodeJSON(t, h.post("/v1beta/models/gemini-x:generateContent", map[string]any{"contents": []any{}}), http.StatusBadRequest)
	require.Equal(t, "INVALID_ARGUMENT", m["error"].(map[string]any)["status"])
	decodeJSON(t, h.post("/v1beta/models/gemini-x:unknownMethod", geminiBody("x", 0)), http.StatusNotFound)
}
