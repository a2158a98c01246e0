package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// A hit is admitted for rpm and parallel limits only (no tokens, no budget)
// unless its group counts hits; a priced hit is one unit at its price.
func TestHitAdmit(t *testing.T) {
	lim := &kernel.Limits{RPM: 10, TPM: 1000, Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar}}}
	scopes := []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}, Limits: lim}}
	stored := kernel.Usage{Input: 40, CachedInput: 2, Output: 7, Reasoning: 3}
	var areq kernel.AdmitRequest

	u := hitAdmit(&areq, &CacheHit{Usage: stored}, "r1", "gpt", scopes)
	require.Equal(t, kernel.Usage{}, u)
	require.Equal(t, int64(10), areq.Scopes[0].Limits.RPM)
	require.Zero(t, areq.Scopes[0].Limits.TPM)
	require.Empty(t, areq.Scopes[0].Limits.Budgets)
	require.Equal(t, int64(1000), lim.TPM, "the key's own limits are untouched")
	require.Zero(t, kernel.WorstCost(areq.Price, areq.PromptBytes, areq.DefaultMaxTokens))

	u = hitAdmit(&areq, &CacheHit{Usage: stored, Price: 250_000}, "r2", "gpt", scopes)
	require.Equal(t, kernel.Usage{Input: 1}, u)
	require.Zero(t, areq.Scopes[0].Limits.TPM)
	require.Equal(t, kernel.Money(250_000), kernel.Cost(areq.Price, u), "one unit at the hit's price")
	require.Equal(t, kernel.Money(250_000), kernel.WorstCost(areq.Price, areq.PromptBytes, areq.DefaultMaxTokens))

	u = hitAdmit(&areq, &CacheHit{Usage: stored, CountHits: true}, "r3", "gpt", scopes)
	require.Equal(t, stored, u, "settled with the stored reply's tokens")
	require.Same(t, lim, areq.Scopes[0].Limits, "every limit applies")
	require.Equal(t, int64(42), areq.PromptBytes)
	require.Equal(t, int64(10), areq.MaxTokens)
}
