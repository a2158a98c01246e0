package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPromptTextBytes(t *testing.T) {
	tests := []struct {
		name string
		api  API
		body string
		want int
	}{
		{"chat", APIChat, `{"model":"gpt-4o","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello"}]}`, len("Be brief.") + len("Say hello")},
		{"chat parts", APIChat, `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"abc"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`, len("abc")},
		{"anthropic system string", APIMessages, `{"model":"m","system":"You are terse.","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, len("You are terse.") + len("hi")},
		{"anthropic system blocks", APIMessages, `{"model":"m","system":[{"type":"text","text":"sys"}],"messages":[{"role":"user","content":"hi"}]}`, len("sys") + len("hi")},
		{"completions prompt", APICompletions, `{"model":"m","prompt":"once upon a time"}`, len("once upon a time")},
		{"completions prompt list", APICompletions, `{"model":"m","prompt":["ab","cde"]}`, 5},
		{"embeddings input", APIEmbeddings, `{"model":"m","input":["one","three"]}`, 8},
		{"tools", APIChat, `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, 1 + len(`[{"type":"function"}]`)},
		{"no text", APIChat, `{"model":"m","stream":true}`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseRequest(tt.api, []byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, int64(tt.want), PromptTextBytes(in))
		})
	}
}

func TestReasoningAskedOrPossible(t *testing.T) {
	for _, c := range []struct {
		model string
		body  string
		hides bool
	}{
		{"gpt-4o-mini", "", false},
		{"gpt-4.1", "", false},
		{"gpt-4", "", false},
		{"gpt-3.5-turbo", "", false},
		{"claude-sonnet-4-5", "", false},
		{"anthropic.claude-3-5-sonnet-20240620-v1:0", "", false},
		{"gemini-2.0-flash", "", false},
		{"claude-sonnet-4-5", `{"thinking":{"type":"enabled","budget_tokens":2048}}`, true},
		{"gpt-4o", `{"reasoning":{"effort":"low"}}`, true},
		{"gemini-2.0-flash", `{"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}}`, true},
		{"o3", "", true},
		{"o4-mini", "", true},
		{"gpt-5", "", true},
		{"gemini-2.5-pro", "", true},
		{"my-azure-deployment", "", true},
		{"", "", true},
	} {
		body := c.body
		if body == "" {
			body = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
		}
		require.Equal(t, c.hides, ReasoningAsked([]byte(body)) || MayReason(c.model), "%s %s", c.model, c.body)
	}
}
