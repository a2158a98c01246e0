package mockllm

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestChatJSON(t *testing.T) {
	h := start(t, testConfig())
	// 4 + 11 bytes of text → ceil(15/4) = 4 prompt tokens; reply from the last message.
	body := map[string]any{"model": "mock-gpt", "messages": []any{
		map[string]any{"role": "system", "content": "be ok"[:4]},
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "hello world"}}},
	}}
	m := decodeJSON(t, h.post("/v1/chat/completions", body, "Authorization", "Bearer k1"), http.StatusOK)
	require.Equal(t, "chat.completion", m["object"])
	require.Equal(t, "mock-gpt", m["model"])
	require.True(t, strings.HasPrefix(m["id"].(string), "chatcmpl-"))
	choice := m["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "stop", choice["finish_reason"])
	msg := choice["message"].(map[string]any)
	require.Equal(t, "assistant", msg["role"])
	require.Equal(t, words("hello world", 16), msg["content"])
	usage := m["usage"].(map[string]any)
	require.InDelta(t, 4, usage["prompt_tokens"], 0)
	require.InDelta(t, 16, usage["completion_tokens"], 0)
	require.InDelta(t, 20, usage["total_tokens"], 0)

	// max_tokens below the default caps the reply: finish_reason length.
	m = decodeJSON(t, h.post("/v1/chat/completions", chatBody("one two", map[string]any{"max_completion_tokens": 3}), "Authorization", "Bearer k1"), http.StatusOK)
	choice = m["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "length", choice["finish_reason"])
	require.Equal(t, "one two one", choice["message"].(map[string]any)["content"])

	st := h.srv.Stats().Keys["k1"]
	require.Equal(t, Usage{Requests: 2, InputTokens: 4 + 2, OutputTokens: 16 + 3}, st)
}

func TestChatValidation(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/chat/completions", `{"model":`), http.StatusBadRequest)
	require.Equal(t, "invalid_request_error", m["error"].(map[string]any)["type"])
	decodeJSON(t, h.post("/v1/chat/completions", map[string]any{"messages": []any{}}), http.StatusBadRequest)
	decodeJSON(t, h.post("/v1/chat/completions", map[string]any{"model": "m", "messages": []any{}}), http.StatusBadRequest)
	decodeJSON(t, h.post("/v1/nope", "{}"), http.StatusNotFound)
	require.Equal(t, Usage{}, h.srv.Stats().Total)
}

func TestChatStream(t *testing.T) {
	cfg := testConfig()
	cfg.Chunks = 3
	h := start(t, cfg)
	resp := h.post("/v1/chat/completions", chatBody("alpha beta gamma delta", map[string]any{
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "max_tokens": 7,
	}), "Authorization", "Bearer k2")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("content-type"))
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	// role, 3 content chunks, finish, usage, [DONE]
	require.Len(t, evs, 7)
	first := jsonOf(t, evs[0].data)
	require.Equal(t, "chat.completion.chunk", first["object"])
	require.Contains(t, first, "usage")
	require.Nil(t, first["usage"])
	delta := first["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	require.Equal(t, "assistant", delta["role"])
	var text strings.Builder
	for _, e := range evs[1:4] {
		c := jsonOf(t, e.data)["choices"].([]any)[0].(map[string]any)
		require.Nil(t, c["finish_reason"])
		text.WriteString(c["delta"].(map[string]any)["content"].(string))
	}
	require.Equal(t, words("alpha beta gamma delta", 7), text.String())
	fin := jsonOf(t, evs[4].data)["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "length", fin["finish_reason"])
	require.Empty(t, fin["delta"])
	u := jsonOf(t, evs[5].data)
	require.Empty(t, u["choices"])
	usage := u["usage"].(map[string]any)
	require.InDelta(t, 6, usage["prompt_tokens"], 0) // 22 bytes
	require.InDelta(t, 7, usage["completion_tokens"], 0)
	require.InDelta(t, 13, usage["total_tokens"], 0)
	require.Equal(t, "[DONE]", evs[6].data)
	require.Equal(t, Usage{Requests: 1, InputTokens: 6, OutputTokens: 7}, h.srv.Stats().Keys["k2"])

	// Without include_usage: no usage chunk and no usage field.
	resp = h.post("/v1/chat/completions", chatBody("x", map[string]any{"stream": true}))
	evs, err = readEvents(resp.Body)
	require.NoError(t, err)
	require.Len(t, evs, 1+3+1+1)
	for _, e := range evs[:len(evs)-1] {
		require.NotContains(t, jsonOf(t, e.data), "usage")
	}
}

func TestCompletions(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/completions", map[string]any{"model": "mock-gpt", "prompt": "say this", "max_tokens": 5}), http.StatusOK)
	require.Equal(t, "text_completion", m["object"])
	c := m["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "say this say this say", c["text"])
	require.Equal(t, "length", c["finish_reason"])
	require.InDelta(t, 2, m["usage"].(map[string]any)["prompt_tokens"], 0)

	resp := h.post("/v1/completions", map[string]any{
		"model": "mock-gpt", "prompt": []string{"a b"}, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "max_tokens": 2,
	})
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	require.Len(t, evs, 2+1+1+1) // 2 words, finish, usage, [DONE]
	var text strings.Builder
	for _, e := range evs[:2] {
		m := jsonOf(t, e.data)
		require.Equal(t, "text_completion", m["object"])
		text.WriteString(m["choices"].([]any)[0].(map[string]any)["text"].(string))
	}
	require.Equal(t, "a b", text.String())
	require.Equal(t, "length", jsonOf(t, evs[2].data)["choices"].([]any)[0].(map[string]any)["finish_reason"])
	require.InDelta(t, 2, jsonOf(t, evs[3].data)["usage"].(map[string]any)["completion_tokens"], 0)
	require.Equal(t, "[DONE]", evs[4].data)
}

func TestEmbeddings(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/embeddings", map[string]any{"model": "mock-embedding", "input": "hello there"}, "Authorization", "Bearer e"), http.StatusOK)
	require.Equal(t, "list", m["object"])
	data := m["data"].([]any)
	require.Len(t, data, 1)
	vec := data[0].(map[string]any)["embedding"].([]any)
	require.Len(t, vec, 8)
	for _, v := range vec {
		require.Less(t, math.Abs(v.(float64)), 1.0)
	}
	require.InDelta(t, 3, m["usage"].(map[string]any)["prompt_tokens"], 0)

	// Deterministic: the same input gives the same vector.
	m2 := decodeJSON(t, h.post("/v1/embeddings", map[string]any{"model": "mock-embedding", "input": []string{"hello there", "x"}, "dimensions": 4}, "Authorization", "Bearer e"), http.StatusOK)
	data2 := m2["data"].([]any)
	require.Len(t, data2, 2)
	require.Len(t, data2[0].(map[string]any)["embedding"], 4)
	require.InDelta(t, 4, m2["usage"].(map[string]any)["total_tokens"], 0) // 3 + 1
	b := decodeJSON(t, h.post("/v1/embeddings", map[string]any{"model": "mock-embedding", "input": "hello there", "encoding_format": "base64"}, "Authorization", "Bearer e"), http.StatusOK)
	raw, err := base64.StdEncoding.DecodeString(b["data"].([]any)[0].(map[string]any)["embedding"].(string))
	require.NoError(t, err)
	require.Len(t, raw, 4*8)
	for i, v := range vec {
		require.InDelta(t, v.(float64), float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))), 1e-7)
	}
	tok := decodeJSON(t, h.post("/v1/embeddings", map[string]any{"model": "mock-embedding", "input": [][]int{{1, 2, 3}, {4}}}), http.StatusOK)
	require.InDelta(t, 4, tok["usage"].(map[string]any)["prompt_tokens"], 0)
	decodeJSON(t, h.post("/v1/embeddings", map[string]any{"model": "mock-embedding", "input": 5}), http.StatusBadRequest)
	require.Equal(t, Usage{Requests: 3, InputTokens: 3 + 4 + 3}, h.srv.Stats().Keys["e"])
}

func TestModels(t *testing.T) {
	cfg := testConfig()
	cfg.Models = []string{"a", "b"}
	h := start(t, cfg)
	m := decodeJSON(t, h.get("/v1/models"), http.StatusOK)
	require.Equal(t, "list", m["object"])
	data := m["data"].([]any)
	require.Len(t, data, 2)
	require.Equal(t, "a", data[0].(map[string]any)["id"])
	require.Equal(t, "model", data[1].(map[string]any)["object"])
}

func TestAzure(t *testing.T) {
	h := start(t, testConfig())
	body := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi there"}}}
	m := decodeJSON(t, h.post("/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21", body, "api-key", "az"), http.StatusOK)
	require.Equal(t, "gpt4o-prod", m["model"])
	require.Equal(t, words("hi there", 16), m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"])
	decodeJSON(t, h.post("/openai/deployments/d/completions?api-version=1", map[string]any{"prompt": "p"}, "api-key", "az"), http.StatusOK)
	e := decodeJSON(t, h.post("/openai/deployments/d/embeddings?api-version=1", map[string]any{"input": "abcd"}, "api-key", "az"), http.StatusOK)
	require.Equal(t, "d", e["model"])
	decodeJSON(t, h.post("/openai/deployments/d/chat/completions", body, "api-key", "az"), http.StatusNotFound)
	require.Equal(t, Usage{Requests: 3, InputTokens: 2 + 1 + 1, OutputTokens: 32}, h.srv.Stats().Keys["az"])
}
