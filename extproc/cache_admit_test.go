package extproc

import (
	"testing"
	"time"

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

// A group that counts hits and prices them: the hit is admitted under
// every limit, tpm counts exactly the stored reply's tokens, and the
// budget is reserved and charged exactly the hit's price — through the
// kernel's own admission and settlement.
func TestHitAdmitCountedAndPriced(t *testing.T) {
	stored := kernel.Usage{Input: 40, CachedInput: 2, Output: 7, Reasoning: 3} // 52 tokens
	price := kernel.Money(250_000)
	monthly := kernel.Period{Kind: kernel.PeriodMonthly}
	ref := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}
	now := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		tpm      int64
		budget   kernel.Money
		admitted bool
		reason   kernel.Reason
	}{
		{name: "within every limit", tpm: 1000, budget: kernel.Dollar, admitted: true},
		{name: "tpm holds exactly the stored tokens", tpm: 52, budget: kernel.Dollar, admitted: true},
		{name: "one token short of tpm", tpm: 51, budget: kernel.Dollar, reason: kernel.ReasonTokenLimit},
		{name: "budget holds exactly the price", tpm: 1000, budget: price, admitted: true},
		{name: "budget one nano-dollar short", tpm: 1000, budget: price - 1, reason: kernel.ReasonBudgetExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := &kernel.Limits{RPM: 10, TPM: tc.tpm, Budgets: []kernel.BudgetWindow{{Limit: tc.budget, Period: monthly}}}
			scopes := []kernel.Scope{{Ref: ref, Limits: lim}}
			var areq kernel.AdmitRequest
			u := hitAdmit(&areq, &CacheHit{Usage: stored, Price: price, CountHits: true}, "r", "gpt", scopes)
			require.Same(t, lim, areq.Scopes[0].Limits, "every limit applies")
			require.Equal(t, stored.Total(), u.Total(), "tpm counts the stored reply's tokens")
			require.Equal(t, price, kernel.Cost(areq.Price, u), "charged the price, not the tokens")

			st := kernel.NewState()
			d := st.Admit(now, &areq)
			require.Equal(t, tc.admitted, d.Admitted, "%+v", d)
			if !tc.admitted {
				require.Equal(t, tc.reason, d.Reason)
				return
			}
			_, reserved := st.Usage(ref, monthly, now)
			require.Equal(t, price, reserved, "the reservation is the price")
			s, ok := st.Settle(now, "r", u, kernel.StatusCompleted)
			require.True(t, ok)
			require.Equal(t, price, s.Cost)
			spent, _ := st.Usage(ref, monthly, now)
			require.Equal(t, price, spent)
			// The minute's tokens and the budget's spend are the first
			// hit's: a second one fits only where both leave room for it.
			areq.ID = "r2"
			d = st.Admit(now, &areq)
			require.Equal(t, tc.tpm >= 2*stored.Total() && tc.budget >= 2*price, d.Admitted, "%+v", d)
		})
	}
}
