package e2e

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestToolCallTranslation drives tool calls end to end through the gateway's
// translation paths, mockllm answering with one get_weather call
// (x-mock-tool-call): the OpenAI SDK on a model group served by an Anthropic
// provider (chat completions → Messages), and the Anthropic SDK on the demo
// OpenAI model group (Messages → chat completions). The prompt "What is the
// weather in Paris" makes mockllm call get_weather with {"city":"Paris"}.
func TestToolCallTranslation(t *testing.T) {
	s := startSystem(t)
	const model = "claude-tools"
	s.cli(nil, []string{"CRED=sk-ant-e2e-tools"}, "provider", "create", "p-anthropic", "--type", "anthropic",
		"--base-url", s.mockURL+"/v1", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-anthropic", "--provider", "p-anthropic", "--model", "claude-mock")
	s.cli(nil, nil, "model", "create", model, "--deployments", "d-anthropic")
	_, key := s.createKey("--alias", "tools", "--models", model)
	s.waitKey(key)
	env := []string{"TOLLGATE_MODEL=" + model}
	wantArgs := map[string]any{"city": "Paris"}

	type openAIOut struct {
		Name, ID, Finish string
		Args             map[string]any
		Calls            int
		Usage            *chatUsage
	}
	t.Run("OpenAI SDK on an Anthropic model group", func(t *testing.T) {
		var out openAIOut
		s.node("openai.mjs", "toolcall", key, &out, env...)
		require.Equal(t, 1, out.Calls, "%+v", out)
		require.Equal(t, "get_weather", out.Name)
		require.NotEmpty(t, out.ID)
		require.Equal(t, wantArgs, out.Args)
		require.Equal(t, "tool_calls", out.Finish)
		require.NotNil(t, out.Usage)
		require.Equal(t, int64(4), out.Usage.Completion, `ceil(len({"city":"Paris"}) / 4)`)
	})
	t.Run("OpenAI SDK stream on an Anthropic model group", func(t *testing.T) {
		var out openAIOut
		s.node("openai.mjs", "toolstream", key, &out, env...)
		require.Equal(t, 1, out.Calls, "%+v", out)
		require.Equal(t, "get_weather", out.Name)
		require.NotEmpty(t, out.ID)
		require.Equal(t, wantArgs, out.Args)
		require.Equal(t, "tool_calls", out.Finish)
		require.NotNil(t, out.Usage)
		require.Equal(t, int64(4), out.Usage.Completion)
	})

	type anthropicOut struct {
		Blocks         []string
		Name, ID, Stop string
		Input          map[string]any
		Usage, Delta   *anthropicUsage
	}
	t.Run("Anthropic SDK on the demo OpenAI model group", func(t *testing.T) {
		var out anthropicOut
		s.node("anthropic.mjs", "toolcall", s.demoKey, &out)
		require.Equal(t, []string{"tool_use"}, out.Blocks, "%+v", out)
		require.Equal(t, "get_weather", out.Name)
		require.NotEmpty(t, out.ID)
		require.Equal(t, wantArgs, out.Input)
		require.Equal(t, "tool_use", out.Stop)
		require.NotNil(t, out.Usage)
		require.Equal(t, int64(4), out.Usage.Output)
	})
	t.Run("Anthropic SDK stream on the demo OpenAI model group", func(t *testing.T) {
		var out anthropicOut
		s.node("anthropic.mjs", "toolstream", s.demoKey, &out)
		require.Equal(t, []string{"tool_use"}, out.Blocks, "%+v", out)
		require.Equal(t, "get_weather", out.Name)
		require.NotEmpty(t, out.ID)
		require.Equal(t, wantArgs, out.Input)
		require.Equal(t, "tool_use", out.Stop)
		require.NotNil(t, out.Delta)
		require.Equal(t, int64(4), out.Delta.Output)
	})
}
