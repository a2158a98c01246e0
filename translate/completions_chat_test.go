package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCompletionsViaChatRefusals: what chat cannot express is refused with a
// 400 naming the member, on every provider the completions go through chat.
func TestCompletionsViaChatRefusals(t *testing.T) {
	cases := map[string]struct{ body, msg string }{
		"two prompts":  {`{"model":"m","prompt":["a","b"]}`, "prompt: must be one prompt"},
		"token prompt": {`{"model":"m","prompt":[1,2,3]}`, "prompt: must be a string"},
		"no prompt":    {`{"model":"m"}`, "prompt: is required"},
		"suffix":       {`{"model":"m","prompt":"a","suffix":"z"}`, "suffix: is not supported"},
		"echo":         {`{"model":"m","prompt":"a","echo":true}`, "echo: is not supported"},
		"logprobs":     {`{"model":"m","prompt":"a","logprobs":2}`, "logprobs: is not supported"},
		"best_of":      {`{"model":"m","prompt":"a","best_of":3}`, "best_of: must be 1"},
		"n":            {`{"model":"m","prompt":"a","n":2}`, "n: must be 1"},
	}
	for _, p := range []ProviderType{ProviderGemini, ProviderBedrock, ProviderVertex} {
		for name, tc := range cases {
			t.Run(string(p)+"/"+name, func(t *testing.T) {
				in, err := ParseRequest(APICompletions, []byte(tc.body))
				require.NoError(t, err)
				_, err = NewTranslator(APICompletions, p).Request(in, &Target{Provider: p, ProviderModel: "x"})
				require.ErrorContains(t, err, tc.msg)
			})
		}
	}
}

// TestCompletionsViaChatDefaultMaxTokens: without max_tokens the upstream gets
// OpenAI's default of 16, and a kernel clamp never raises it.
func TestCompletionsViaChatDefaultMaxTokens(t *testing.T) {
	in, err := ParseRequest(APICompletions, []byte(`{"model":"m","prompt":"hi"}`))
	require.NoError(t, err)
	in.ClampMaxTokens = 500
	out, err := NewTranslator(APICompletions, ProviderGemini).Request(in, &Target{Provider: ProviderGemini, ProviderModel: "g"})
	require.NoError(t, err)
	require.Contains(t, string(out.Body), `"maxOutputTokens":16`)
}
