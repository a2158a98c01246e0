package translate

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

func TestAnthropicStatusType(t *testing.T) {
	for status, want := range map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 422: "invalid_request_error",
		429: "rate_limit_error", 500: "api_error", 502: "api_error", 503: "overloaded_error", 529: "overloaded_error",
	} {
		require.Equal(t, want, anthropicStatusType(status), "status %d", status)
	}
}

func TestStopAndFinishReasons(t *testing.T) {
	for in, want := range map[string]string{
		"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
		"refusal": "content_filter", "pause_turn": "stop", "model_context_window_exceeded": "length",
	} {
		require.Equal(t, want, finishReason(in), in)
	}
	for in, want := range map[string]string{
		"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use",
		"content_filter": "refusal", "": "end_turn",
	} {
		require.Equal(t, want, stopReason(in), in)
	}
}

func TestAnthropicMaxTokens(t *testing.T) {
	tests := []struct {
		name          string
		clamp, client int64
		def           int64
		want          int64
	}{
		{"clamp wins", 10, 100, 50, 10},
		{"client", 0, 100, 50, 100},
		{"deployment default", 0, 0, 50, 50},
		{"fallback", 0, 0, 0, defaultAnthropicMaxTokens},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := anthropicMaxTokens(&Inbound{ClampMaxTokens: tt.clamp, MaxTokens: tt.client}, &Target{DefaultMaxTokens: tt.def})
			require.Equal(t, tt.want, got)
		})
	}
}

// TestChatAnthropicRequestErrors: requests Anthropic cannot express are
// refused with a message naming the problem (the processor answers 400).
func TestChatAnthropicRequestErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"bad role", `{"model":"m","messages":[{"role":"function","content":"x"}]}`, `role "function"`},
		{"ftp image", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x"}}]}]}`, "http(s) or data URL"},
		{"data url not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "base64"},
		{"image in system", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, "only supported in user"},
		{"audio part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, `"input_audio"`},
		{"bad arguments", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{nope"}}]}]}`, "not JSON"},
		{"bad stop", `{"model":"m","stop":5,"messages":[]}`, "stop must be"},
		{"bad tool choice", `{"model":"m","tool_choice":{"type":"function"},"messages":[]}`, "tool_choice"},
		{"several choices", `{"model":"m","n":2,"messages":[]}`, "only one choice"},
		{"non-function tool", `{"model":"m","tools":[{"type":"web_search"}],"messages":[]}`, "web_search"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseRequest(APIChat, []byte(tt.body))
			require.NoError(t, err)
			_, err = NewTranslator(APIChat, ProviderAnthropic).Request(in, &Target{ProviderModel: "p"})
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestMessagesOpenAIRequestErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"bad role", `{"model":"m","max_tokens":1,"messages":[{"role":"tool","content":"x"}]}`, `role "tool"`},
		{"system with a tool call", `{"model":"m","max_tokens":1,"messages":[{"role":"system","content":[{"type":"tool_use","id":"t","name":"n","input":{}}]}]}`, "text only"},
		{"document", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"document","source":{}}]}]}`, `"document"`},
		{"image without source", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, "without source"},
		{"content not blocks", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":5}]}`, "content must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseRequest(APIMessages, []byte(tt.body))
			require.NoError(t, err)
			_, err = NewTranslator(APIMessages, ProviderOpenAI).Request(in, &Target{ProviderModel: "p"})
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestToolChoice maps every OpenAI tool_choice to Anthropic's.
func TestToolChoice(t *testing.T) {
	f, tr := false, true
	tests := []struct {
		raw      string
		parallel *bool
		want     string
	}{
		{``, nil, ``},
		{`"auto"`, nil, ``},
		{`"auto"`, &tr, ``},
		{`"auto"`, &f, `{"disable_parallel_tool_use":true,"type":"auto"}`},
		{`"required"`, nil, `{"type":"any"}`},
		{`"none"`, nil, `{"type":"none"}`},
		{`{"type":"function","function":{"name":"f"}}`, &f, `{"disable_parallel_tool_use":true,"name":"f","type":"tool"}`},
	}
	for _, tt := range tests {
		got, err := toolChoice(json.RawMessage(tt.raw), tt.parallel)
		require.NoError(t, err, tt.raw)
		require.Equal(t, tt.want, string(got), tt.raw)
	}
}

// TestAnthropicStreamUsageDeltaInput: newer API versions repeat cumulative
// input counts in message_delta; they replace message_start's.
func TestAnthropicStreamUsageDeltaInput(t *testing.T) {
	var s anthropicStreamUsage
	s.observe([]byte(`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":7,"output_tokens":1}}}`))
	u, rep := s.result()
	require.False(t, rep)
	require.Equal(t, kernel.Usage{Input: 5, CachedInput: 7, Output: 1}, u)
	s.observe([]byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":6,"cache_creation_input_tokens":3,"output_tokens":40}}`))
	u, rep = s.result()
	require.True(t, rep)
	require.Equal(t, kernel.Usage{Input: 6, CachedInput: 7, CacheWrite: 3, Output: 40}, u)
	s.observe([]byte(`{"type":"message_delta","usage":null}`))
	u2, _ := s.result()
	require.Equal(t, u, u2, "a delta without usage changes nothing")
}

// TestAnthropicStreamUsageDeltaNulls: counts a message_delta gives as null
// or does not give keep their earlier values.
func TestAnthropicStreamUsageDeltaNulls(t *testing.T) {
	var s anthropicStreamUsage
	s.observe([]byte(`{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":7,"output_tokens":1}}}`))
	s.observe([]byte(`{"type":"message_delta","usage":{"input_tokens":null,"output_tokens":12}}`))
	u, rep := s.result()
	require.True(t, rep)
	require.Equal(t, kernel.Usage{Input: 5, CachedInput: 7, Output: 12}, u)
}

// TestAnthropicErrorBodyNeverLeaksKeys: provider keys echoed in an Anthropic
// error never reach the client, in either client shape.
func TestAnthropicErrorBodyNeverLeaksKeys(t *testing.T) {
	const key = "sk-ant-api03-secretsecretsecret"
	body := []byte(`{"type":"error","error":{"type":"invalid_request_error","message":"key ` + key + ` and sk-ant-other-1234567 are wrong"}}`)
	for _, api := range []API{APIMessages, APIChat} {
		tr := NewTranslator(api, ProviderAnthropic)
		in, err := ParseRequest(api, []byte(`{"model":"m","max_tokens":1,"messages":[]}`))
		require.NoError(t, err)
		_, err = tr.Request(in, &Target{APIKey: key, ProviderModel: "p"})
		require.NoError(t, err)
		out := string(tr.Error(http.StatusBadRequest, body))
		require.NotContains(t, out, key)
		require.NotContains(t, out, "sk-ant-other")
		require.Contains(t, out, "[redacted]")
	}
}
