package mockllm

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResponsesJSON(t *testing.T) {
	h := start(t, testConfig())
	// "be ok" (instructions, 5) + "hello world" (11) = 16 bytes → 4 input tokens.
	body := map[string]any{"model": "mock-gpt", "instructions": "be ok", "input": []any{
		map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hello world"}}},
	}}
	m := decodeJSON(t, h.post("/v1/responses", body, "Authorization", "Bearer k1"), http.StatusOK)
	require.Equal(t, "response", m["object"])
	require.Equal(t, "completed", m["status"])
	require.True(t, strings.HasPrefix(m["id"].(string), "resp_"))
	item := m["output"].([]any)[0].(map[string]any)
	require.Equal(t, "message", item["type"])
	part := item["content"].([]any)[0].(map[string]any)
	require.Equal(t, "output_text", part["type"])
	require.Equal(t, words("hello world", 16), part["text"])
	usage := m["usage"].(map[string]any)
	require.InDelta(t, 4, usage["input_tokens"], 0)
	require.InDelta(t, 16, usage["output_tokens"], 0)
	require.InDelta(t, 20, usage["total_tokens"], 0)

	// max_output_tokens caps the reply: incomplete. Azure's v1 path serves it too.
	m = decodeJSON(t, h.post("/openai/v1/responses", map[string]any{"model": "d", "input": "one two", "max_output_tokens": 3}, "Api-Key", "k1"), http.StatusOK)
	require.Equal(t, "incomplete", m["status"])
	require.Equal(t, "max_output_tokens", m["incomplete_details"].(map[string]any)["reason"])
	require.Equal(t, Usage{Requests: 2, InputTokens: 4 + 2, OutputTokens: 16 + 3}, h.srv.Stats().Keys["k1"])

	decodeJSON(t, h.post("/v1/responses", map[string]any{"input": "x"}), http.StatusBadRequest)
	decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": 5}), http.StatusBadRequest)
}

func TestResponsesStream(t *testing.T) {
	cfg := testConfig()
	cfg.Chunks = 3
	h := start(t, cfg)
	resp := h.post("/v1/responses", map[string]any{"model": "m", "input": "alpha beta gamma delta", "stream": true, "max_output_tokens": 7}, "Authorization", "Bearer k2")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs, err := readEvents(resp.Body)
	require.NoError(t, err)
	var names []string
	var text strings.Builder
	for i, e := range evs {
		names = append(names, e.name)
		m := jsonOf(t, e.data)
		require.Equal(t, e.name, m["type"])
		require.InDelta(t, i, m["sequence_number"], 0)
		if e.name == "response.output_text.delta" {
			text.WriteString(m["delta"].(string))
		}
	}
	require.Equal(t, []string{
		"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete",
	}, names)
	require.Equal(t, words("alpha beta gamma delta", 7), text.String())
	final := jsonOf(t, evs[len(evs)-1].data)["response"].(map[string]any)
	require.InDelta(t, 6, final["usage"].(map[string]any)["input_tokens"], 0)
	require.InDelta(t, 7, final["usage"].(map[string]any)["output_tokens"], 0)
	require.Equal(t, Usage{Requests: 1, InputTokens: 6, OutputTokens: 7}, h.srv.Stats().Keys["k2"])

	// x-mock-tool-call: one function_call item, arguments in two deltas.
	resp = h.post("/v1/responses", map[string]any{
		"model": "m", "input": "weather in Paris", "stream": true,
		"tools": []any{map[string]any{"type": "function", "name": "get_weather"}},
	}, "X-Mock-Tool-Call", "get_weather")
	evs, err = readEvents(resp.Body)
	require.NoError(t, err)
	var args strings.Builder
	for _, e := range evs {
		if e.name == "response.function_call_arguments.delta" {
			args.WriteString(jsonOf(t, e.data)["delta"].(string))
		}
	}
	require.Equal(t, `{"city":"Paris"}`, args.String())
	require.Equal(t, "response.completed", evs[len(evs)-1].name)
}
