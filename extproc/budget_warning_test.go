package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

func TestSoftBudgetPassesAndWarns(t *testing.T) {
	// The same half-cent budget as TestBudgetExceededWithKernel, soft: every
	// request passes, and once the spend has reached the limit the replies
	// carry x-tollgate-budget-warning.
	e := newTestEnv(t)
	p := e.cat.keys[clientKey]
	p.Scopes[0].Limits = &kernel.Limits{
		Budgets:   []kernel.BudgetWindow{{Limit: kernel.Cent / 2, Period: kernel.Period{Kind: kernel.PeriodTotal}, Soft: true}},
		Shortfall: kernel.Reject,
	}
	body := `{"model":"gpt-4o","max_tokens":100,"messages":[]}`
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	var spent kernel.Money
	warned := 0
	for i := range 50 {
		resp := e.do(t, post("/v1/chat/completions", clientKey, body), up.upstream)
		require.Nil(t, resp.LocalReply, "request %d: a soft budget never refuses", i)
		require.Equal(t, 200, resp.Status)
		w := resp.Headers.Value(hdrBudgetWarning)
		if spent < kernel.Cent/2 {
			require.Empty(t, w, "request %d: spent %s is under the limit", i, spent)
		} else {
			want := "key:" + p.KeyID + " total spent=" + formatUSD(spent) + " limit=0.005000000"
			require.Equal(t, want, w, "request %d", i)
			warned++
		}
		spent = 0
		for _, r := range e.acct.Records() {
			spent += kernel.Cost(testPrice, r.Usage)
		}
	}
	require.Len(t, up.got, 50)
	require.Greater(t, spent, kernel.Cent/2, "the soft budget was passed")
	require.Positive(t, warned)
}
