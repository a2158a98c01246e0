package mockllm

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func messagesBody(text string, extra map[string]any) map[string]any {
	b := map[string]any{"model": "mock-claude", "max_tokens": 1024, "messages": []any{map[string]any{"role": "user", "content": text}}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func TestMessagesJSON(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/messages", messagesBody("what is up", map[string]any{"system": "sys!"}), "x-api-key", "ant"), http.StatusOK)
	require.Equal(t, "message", m["type"])
	require.Equal(t, "assistant", m["role"])
	require.Equal(t, "mock-claude", m["model"])
	require.True(t, strings.HasPrefix(m["id"].(string), "msg_"))
	require.Equal(t, "end_turn", m["stop_reason"])
	require.Contains(t, m, "stop_sequence")
	content := m["content"].([]any)
	require.Len(t, content, 1)
	require.Equal(t, map[string]any{"type": "text", "text": words("what is up", 16)}, content[0])
	// "sys!" + "what is up" = 14 bytes → 4 tokens; no cache fields without cache_control.
	require.Equal(t, map[string]any{"input_tokens": 4.0, "output_tokens": 16.0}, m["usage"])

	m = decodeJSON(t, h.post("/v1/messages", messagesBody("a", map[string]any{"max_tokens": 2}), "x-api-key", "ant"), http.StatusOK)
	require.Equal(t, "max_tokens", m["stop_reason"])
	require.Equal(t, "a a", m["content"].([]any)[0].(map[string]any)["text"])
	require.Equal(t, Usage{Requests: 2, InputTokens: 5, OutputTokens: 18}, h.srv.Stats().Keys["ant"])
}

func TestMessagesValidation(t *testing.T) {
	h := start(t, testConfig())
	body := messagesBody("x", nil)
	delete(body, "max_tokens")
	m := decodeJSON(t, h.post("/v1/messages", body), http.StatusBadRequest)
	require.Equal(t, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "max_tokens: Field required"}}, m)
	decodeJSON(t, h.post("/v1/messages", map[string]any{"model": "m", "max_tokens": 1}), http.StatusBadRequest)
}

func TestMessagesStream(t *testing.T) {
	cfg := testConfig()
	cfg.Chunks = 2
	h := start(t, cfg)
	resp := h.post("/v1/messages", messagesBody("one two three", map[string]any{"stream": true, "max_tokens": 5}), "x-api-key", "ant")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream; charset=utf-8", resp.Header.Get("content-type"))
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
		require.Equal(t, e.name, jsonOf(t, e.data)["type"], "event name matches data type")
	}
	require.Equal(t, []string{
		"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop",
	}, names)
	start := jsonOf(t, evs[0].data)["message"].(map[string]any)
	require.Equal(t, "message", start["type"])
	require.Empty(t, start["content"])
	require.Nil(t, start["stop_reason"])
	require.Equal(t, map[string]any{"input_tokens": 4.0, "output_tokens": 1.0}, start["usage"])
	require.Equal(t, map[string]any{"type": "content_block_start", "index": 0.0, "content_block": map[string]any{"type": "text", "text": ""}}, jsonOf(t, evs[1].data))
	var text strings.Builder
	for _, e := range evs[3:5] {
		d := jsonOf(t, e.data)
		require.InDelta(t, 0, d["index"], 0)
		delta := d["delta"].(map[string]any)
		require.Equal(t, "text_delta", delta["type"])
		text.WriteString(delta["text"].(string))
	}
	require.Equal(t, "one two three one two", text.String())
	require.Equal(t, map[string]any{"type": "content_block_stop", "index": 0.0}, jsonOf(t, evs[5].data))
	require.Equal(t, map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": "max_tokens", "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 5.0},
	}, jsonOf(t, evs[6].data))
	require.Equal(t, Usage{Requests: 1, InputTokens: 4, OutputTokens: 5}, h.srv.Stats().Keys["ant"])
}

func TestMessagesPromptCaching(t *testing.T) {
	h := start(t, testConfig())
	sys := strings.Repeat("s", 400) // 100 tokens, cached
	body := map[string]any{
		"model": "mock-claude", "max_tokens": 4, "stream": true,
		"system":   []any{map[string]any{"type": "text", "text": sys, "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "12345678"}}}},
	}
	usageOf := func(key string) map[string]any {
		resp := h.post("/v1/messages", body, "x-api-key", key)
		evs, err := readEvents(resp.Body)
		require.NoError(t, err)
		return jsonOf(t, evs[0].data)["message"].(map[string]any)["usage"].(map[string]any)
	}
	require.Equal(t, map[string]any{"input_tokens": 2.0, "cache_creation_input_tokens": 100.0, "cache_read_input_tokens": 0.0, "output_tokens": 1.0}, usageOf("c1"))
	require.Equal(t, map[string]any{"input_tokens": 2.0, "cache_creation_input_tokens": 0.0, "cache_read_input_tokens": 100.0, "output_tokens": 1.0}, usageOf("c1"))
	// Another key has its own cache.
	require.InDelta(t, 100, usageOf("c2")["cache_creation_input_tokens"], 0)
	require.Equal(t, Usage{Requests: 2, InputTokens: 4, OutputTokens: 8, CachedTokens: 100, CacheCreationTokens: 100}, h.srv.Stats().Keys["c1"])

	// Reset forgets the cache as well.
	h.srv.ResetStats()
	require.InDelta(t, 100, usageOf("c1")["cache_creation_input_tokens"], 0)

	// JSON reply, top-level cache_control: the whole prompt is the prefix.
	body["stream"] = false
	delete(body, "system")
	body["cache_control"] = map[string]any{"type": "ephemeral"}
	m := decodeJSON(t, h.post("/v1/messages", body, "x-api-key", "c3"), http.StatusOK)
	require.Equal(t, map[string]any{"input_tokens": 0.0, "cache_creation_input_tokens": 2.0, "cache_read_input_tokens": 0.0, "output_tokens": 4.0}, m["usage"])
}

func TestCountTokens(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/messages/count_tokens", map[string]any{"model": "mock-claude", "system": "abcd", "messages": []any{map[string]any{"role": "user", "content": "efghi"}}}, "x-api-key", "ct"), http.StatusOK)
	require.Equal(t, map[string]any{"input_tokens": 3.0}, m)
	require.NotContains(t, h.srv.Stats().Keys, "ct")
}
