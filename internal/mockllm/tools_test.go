package mockllm

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	chatTools      = []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{"type": "object"}}}}
	anthropicTools = []any{map[string]any{"name": "get_weather", "input_schema": map[string]any{"type": "object"}}}
)

const cityArgs = `{"city":"Paris"}` // 16 bytes → 4 output tokens

func TestChatToolCallJSON(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/chat/completions", chatBody("weather in Paris", map[string]any{"tools": chatTools, "max_tokens": 1}),
		"authorization", "Bearer k", "x-mock-tool-call", "get_weather"), http.StatusOK)
	choice := m["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "tool_calls", choice["finish_reason"])
	msg := choice["message"].(map[string]any)
	require.Contains(t, msg, "content")
	require.Nil(t, msg["content"])
	require.Equal(t, []any{map[string]any{
		"id": "call_mock_1", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": cityArgs},
	}}, msg["tool_calls"])
	require.InDelta(t, 4, m["usage"].(map[string]any)["completion_tokens"], 0)
	require.Equal(t, int64(4), h.srv.Stats().Keys["k"].OutputTokens)

	// Unknown tool, or no header: the text reply.
	m = decodeJSON(t, h.post("/v1/chat/completions", chatBody("weather in Paris", map[string]any{"tools": chatTools}),
		"x-mock-tool-call", "other"), http.StatusOK)
	choice = m["choices"].([]any)[0].(map[string]any)
	require.Equal(t, "stop", choice["finish_reason"])
	require.NotContains(t, choice["message"], "tool_calls")
}

func TestChatToolCallStream(t *testing.T) {
	h := start(t, testConfig())
	resp := h.post("/v1/chat/completions", chatBody("weather in Paris", map[string]any{
		"tools": chatTools, "stream": true, "stream_options": map[string]any{"include_usage": true},
	}), "authorization", "Bearer k", "x-mock-tool-call", "get_weather")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	require.Len(t, evs, 7) // role, tool head, 2 argument pieces, finish, usage, [DONE]
	require.Equal(t, "[DONE]", evs[6].data)
	delta := func(i int) map[string]any {
		return jsonOf(t, evs[i].data)["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	}
	require.Equal(t, "assistant", delta(0)["role"])
	require.Equal(t, []any{map[string]any{
		"index": 0.0, "id": "call_mock_1", "type": "function",
		"function": map[string]any{"name": "get_weather", "arguments": ""},
	}}, delta(1)["tool_calls"])
	var args strings.Builder
	for i := 2; i < 4; i++ {
		tc := delta(i)["tool_calls"].([]any)[0].(map[string]any)
		require.InDelta(t, 0, tc["index"], 0)
		args.WriteString(tc["function"].(map[string]any)["arguments"].(string))
	}
	require.Equal(t, cityArgs, args.String())
	require.Equal(t, "tool_calls", jsonOf(t, evs[4].data)["choices"].([]any)[0].(map[string]any)["finish_reason"])
	require.InDelta(t, 4, jsonOf(t, evs[5].data)["usage"].(map[string]any)["completion_tokens"], 0)
	require.Equal(t, int64(4), h.srv.Stats().Keys["k"].OutputTokens)
}

func TestMessagesToolUseJSON(t *testing.T) {
	h := start(t, testConfig())
	m := decodeJSON(t, h.post("/v1/messages", messagesBody("weather in Paris", map[string]any{"tools": anthropicTools}),
		"x-api-key", "ant", "x-mock-tool-call", "get_weather"), http.StatusOK)
	require.Equal(t, "tool_use", m["stop_reason"])
	require.Equal(t, []any{map[string]any{
		"type": "tool_use", "id": "toolu_mock_1", "name": "get_weather", "input": map[string]any{"city": "Paris"},
	}}, m["content"])
	require.InDelta(t, 4, m["usage"].(map[string]any)["output_tokens"], 0)
	require.Equal(t, int64(4), h.srv.Stats().Keys["ant"].OutputTokens)
}

func TestMessagesToolUseStream(t *testing.T) {
	h := start(t, testConfig())
	resp := h.post("/v1/messages", messagesBody("weather in Paris", map[string]any{"tools": anthropicTools, "stream": true}),
		"x-api-key", "ant", "x-mock-tool-call", "get_weather")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	require.Equal(t, []string{
		"message_start", "content_block_start", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop",
	}, names)
	require.Equal(t, map[string]any{"type": "content_block_start", "index": 0.0, "content_block": map[string]any{
		"type": "tool_use", "id": "toolu_mock_1", "name": "get_weather", "input": map[string]any{},
	}}, jsonOf(t, evs[1].data))
	var partial strings.Builder
	for _, e := range evs[2:4] {
		d := jsonOf(t, e.data)["delta"].(map[string]any)
		require.Equal(t, "input_json_delta", d["type"])
		partial.WriteString(d["partial_json"].(string))
	}
	require.Equal(t, cityArgs, partial.String())
	md := jsonOf(t, evs[5].data)
	require.Equal(t, "tool_use", md["delta"].(map[string]any)["stop_reason"])
	require.InDelta(t, 4, md["usage"].(map[string]any)["output_tokens"], 0)
	require.Equal(t, int64(4), h.srv.Stats().Keys["ant"].OutputTokens)
}
