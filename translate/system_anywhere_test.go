package translate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSystemMessagesAnywhere: a request with system (or developer) messages
// between user turns, as Claude Code and agents send it, goes through every
// translator with each system text kept, in order, and the turns around them
// kept: mapped as the target API allows (in place, or appended in order to
// Anthropic's system, Converse's system blocks, Gemini's
// systemInstruction), never refused and never dropped.
func TestSystemMessagesAnywhere(t *testing.T) {
	requests := map[API]string{
		APIChat: `{"model":"m","messages":[{"role":"system","content":"SYS-ONE"},{"role":"user","content":"TURN-A"},` +
			`{"role":"developer","content":"SYS-TWO"},{"role":"user","content":"TURN-B"}]}`,
		APIMessages: `{"model":"m","max_tokens":16,"system":"SYS-ONE","messages":[{"role":"user","content":"TURN-A"},` +
			`{"role":"system","content":"SYS-TWO"},{"role":"user","content":[{"type":"text","text":"TURN-B"}]}]}`,
		APIResponses: `{"model":"m","instructions":"SYS-ONE","input":[{"role":"user","content":"TURN-A"},` +
			`{"role":"developer","content":"SYS-TWO"},{"role":"user","content":"TURN-B"}]}`,
	}
	targets := []Target{
		{Provider: ProviderOpenAI, ProviderModel: "gpt-4o", BasePath: "/v1"},
		{Provider: ProviderAzure, ProviderModel: "gpt-4o", APIVersion: "2024-10-21"},
		{Provider: ProviderAnthropic, ProviderModel: "claude-sonnet-4-5"},
		{Provider: ProviderGemini, ProviderModel: "gemini-2.5-flash"},
		{Provider: ProviderBedrock, ProviderModel: "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
		{Provider: ProviderVertex, ProviderModel: "gemini-2.5-flash"},
		{Provider: ProviderVertex, ProviderModel: "claude-sonnet-4-5@20250929"},
	}
	for api, body := range requests {
		for _, target := range targets {
			t.Run(fmt.Sprintf("%s/%s/%s", api, target.Provider, target.ProviderModel), func(t *testing.T) {
				tr := NewTranslator(api, target.Provider)
				require.NotNil(t, tr)
				in, err := ParseRequest(api, []byte(body))
				require.NoError(t, err)
				out, err := tr.Request(in, &target)
				require.NoError(t, err, "system messages between turns must be accepted")
				sent := string(in.Body)
				if out.Body != nil {
					sent = string(out.Body)
				}
				one, two := strings.Index(sent, "SYS-ONE"), strings.Index(sent, "SYS-TWO")
				require.GreaterOrEqual(t, one, 0, "first system text dropped: %s", sent)
				require.Positive(t, two, "second system text dropped: %s", sent)
				if !strings.Contains(sent, `"role":"system","content":"SYS-TWO"`) { // kept in place (Anthropic's own API): the top-level system comes first whatever the key order
					require.Greater(t, two, one, "system texts out of order: %s", sent)
				}
				a, b := strings.Index(sent, "TURN-A"), strings.Index(sent, "TURN-B")
				require.GreaterOrEqual(t, a, 0, "%s", sent)
				require.Greater(t, b, a, "%s", sent)
			})
		}
	}
}
