package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The checks every provider type's end-to-end test runs with the official
// SDKs against one of its model groups (TOLLGATE_MODEL in env): 8 output
// tokens asked, 8 served.

// openAIChecks: chat (finish "length", usage), a stream with include_usage
// and, with tools, a streamed tool call.
func (s *system) openAIChecks(t *testing.T, key string, tools bool, env ...string) {
	t.Helper()
	var out struct {
		Content, Finish string
		Usage           struct {
			CompletionTokens int64 `json:"completion_tokens"`
		}
	}
	s.node("openai.mjs", "chat", key, &out, env...)
	require.NotEmpty(t, out.Content)
	require.Equal(t, "length", out.Finish)
	require.Equal(t, int64(8), out.Usage.CompletionTokens)
	var st struct {
		Text  string
		Usage struct {
			CompletionTokens int64 `json:"completion_tokens"`
		}
	}
	s.node("openai.mjs", "stream", key, &st, env...)
	require.Len(t, strings.Fields(st.Text), 8)
	require.Equal(t, int64(8), st.Usage.CompletionTokens)
	if !tools {
		return
	}
	var tc struct {
		Name, Finish string
		Args         struct{ City string }
	}
	s.node("openai.mjs", "toolstream", key, &tc, env...)
	require.Equal(t, "get_weather", tc.Name)
	require.Equal(t, "Paris", tc.Args.City)
	require.Equal(t, "tool_calls", tc.Finish)
}

// anthropicChecks: a message (stop max_tokens, usage), a stream ending with
// message_stop and the usage in message_delta, and, with tools, a streamed
// tool_use.
func (s *system) anthropicChecks(t *testing.T, key string, tools bool, env ...string) {
	t.Helper()
	var out struct {
		Type, Text, Stop string
		Usage            anthropicUsage
	}
	s.node("anthropic.mjs", "messages", key, &out, env...)
	require.Equal(t, "message", out.Type)
	require.NotEmpty(t, out.Text)
	require.Equal(t, "max_tokens", out.Stop)
	require.Equal(t, int64(8), out.Usage.Output)
	var st struct {
		Text, Stop   string
		Start, Delta anthropicUsage
		Events       []string
	}
	s.node("anthropic.mjs", "stream", key, &st, env...)
	require.NotEmpty(t, st.Text)
	require.Equal(t, "message_stop", st.Events[len(st.Events)-1])
	require.Equal(t, "max_tokens", st.Stop)
	require.Equal(t, int64(8), st.Delta.Output)
	require.Positive(t, st.Start.Input+st.Start.CacheRead+st.Start.CacheWrite+st.Delta.Input+st.Delta.CacheRead+st.Delta.CacheWrite,
		"the input is reported in message_start or message_delta")
	if !tools {
		return
	}
	var tc struct {
		Name, Stop string
		Input      struct{ City string }
	}
	s.node("anthropic.mjs", "toolstream", key, &tc, env...)
	require.Equal(t, "get_weather", tc.Name)
	require.Equal(t, "Paris", tc.Input.City)
	require.Equal(t, "tool_use", tc.Stop)
}
