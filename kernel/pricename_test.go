package kernel

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLookupPriceProviderForms: each provider's spelling of a model finds the
// price table's name, one row per form.
func TestLookupPriceProviderForms(t *testing.T) {
	table := map[string]Price{
		"gpt-4o":                                   {Input: 2_500_000_000, Output: 10_000_000_000},
		"claude-sonnet-4-5-20250929":               {Input: 3_000_000_000, Output: 15_000_000_000},
		"claude-sonnet-4-5":                        {Input: 3_000_000_000, Output: 15_000_000_000},
		"claude-opus-4-1-20250805":                 {Input: 15_000_000_000, Output: 75_000_000_000},
		"anthropic.claude-haiku-4-5-20251001-v1:0": {Input: 1_000_000_000, Output: 5_000_000_000},
		"gemini-2.5-pro":                           {Input: 1_250_000_000, Output: 10_000_000_000},
		"amazon.nova-pro-v1:0":                     {Input: 800_000_000, Output: 3_200_000_000},
	}
	find := func(n string) (Price, bool) { p, ok := table[n]; return p, ok }
	for _, tc := range []struct {
		name, provider, model, want string
	}{
		{"openai exact", "openai", "gpt-4o", "gpt-4o"},
		{"azure base model", "azure", "gpt-4o", "gpt-4o"},
		{"anthropic exact", "anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"},
		{"vertex claude @date", "vertex", "claude-sonnet-4-5@20250929", "claude-sonnet-4-5-20250929"},
		{"vertex claude @latest", "vertex", "claude-sonnet-4-5@latest", "claude-sonnet-4-5"},
		{"vertex publisher path", "vertex", "publishers/anthropic/models/claude-opus-4-1@20250805", "claude-opus-4-1-20250805"},
		{"vertex full resource", "vertex", "projects/p/locations/us-east5/publishers/google/models/gemini-2.5-pro", "gemini-2.5-pro"},
		{"gemini models/ prefix", "gemini", "models/gemini-2.5-pro", "gemini-2.5-pro"},
		{"bedrock us profile", "bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"},
		{"bedrock eu profile", "bedrock", "eu.anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1-20250805"},
		{"bedrock apac profile", "bedrock", "apac.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"},
		{"bedrock global profile", "bedrock", "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "claude-sonnet-4-5-20250929"},
		{"bedrock vendor id", "bedrock", "anthropic.claude-sonnet-4-5-20250929-v2:0", "claude-sonnet-4-5-20250929"},
		{"bedrock table's own form", "bedrock", "us.anthropic.claude-haiku-4-5-20251001-v1:0", "anthropic.claude-haiku-4-5-20251001-v1:0"},
		{"bedrock profile ARN", "bedrock", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0", "amazon.nova-pro-v1:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, name, ok := LookupPrice(tc.provider, tc.model, find)
			require.True(t, ok, "names tried: %q", PriceNames(tc.provider, tc.model))
			require.Equal(t, tc.want, name)
			require.Equal(t, table[tc.want], p)
		})
	}
}

// TestLookupPriceNoGuess: names that only look alike are not priced.
func TestLookupPriceNoGuess(t *testing.T) {
	table := map[string]Price{"gpt-4o": {Input: 1}, "claude-sonnet-4-5": {Input: 1}, "claude": {Input: 1}}
	find := func(n string) (Price, bool) { p, ok := table[n]; return p, ok }
	for _, tc := range []struct{ provider, model string }{
		{"openai", "gpt-4o-2024-05-13"},                   // a snapshot may cost more than its alias
		{"vertex", "claude-sonnet-4-5@20250929"},          // dated: no fallback to the alias
		{"openai", "models/gpt-4o"},                       // models/ is Google's
		{"anthropic", "claude-sonnet-4-5@20250929"},       // @ is Vertex's
		{"bedrock", "anthropic.claude-v2"},                // no version suffix to drop
		{"azure", "my-prod-gpt4o"},                        // an Azure deployment name
		{"openai", "us.anthropic.claude-sonnet-4-5-v1:0"}, // Bedrock's forms only on Bedrock
	} {
		_, _, ok := LookupPrice(tc.provider, tc.model, find)
		require.False(t, ok, "%s %s", tc.provider, tc.model)
	}
}
