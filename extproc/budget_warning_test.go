package extproc

import (
	"testing"

	"github.com/tollgate-ai/tollgate/translate"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
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
		w := resp.Headers.Value(translate.HdrBudgetWarning)
		if spent < kernel.Cent/2 {
			require.Empty(t, w, "request %d: spent %s is under the limit", i, spent)
		} else {
			want := "key:" + p.KeyID + " total spent=" + translate.FormatUSD(spent) + " limit=0.005000000"
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

func TestRunBudgetStopsALoop(t *testing.T) {
	// The key gives each run half a cent: an agent's loop of 50 calls with
	// one run id stops at the run's budget; another run goes on; every
	// ledger record names its run.
	e := newTestEnv(t)
	p := e.cat.keys[clientKey]
	p.Scopes[0].Limits = &kernel.Limits{Shortfall: kernel.Reject, Run: &kernel.RunPolicy{Budget: kernel.Cent / 2}}
	body := `{"model":"gpt-4o","max_tokens":100,"messages":[]}`
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	run := func(id string) extprocfilter.Header { return extprocfilter.Header{Key: hdrRunID, Value: id} }
	passed, refused := 0, 0
	for range 50 {
		resp := e.do(t, post("/v1/chat/completions", clientKey, body, run("loop-1")), up.upstream)
		if resp.LocalReply != nil {
			requireOpenAIError(t, resp, wantError{400, "budget_exceeded", "budget_exceeded", "", ""})
			refused++
			continue
		}
		require.Zero(t, refused, "once refused, the run stays refused")
		passed++
	}
	require.Positive(t, passed)
	require.Positive(t, refused)
	runID := kernel.RunScopeID(p.Scopes[0].Ref, "loop-1")
	var spent kernel.Money
	for _, r := range e.acct.Records() {
		require.Equal(t, runID, r.RunID)
		spent += kernel.Cost(testPrice, r.Usage)
	}
	require.LessOrEqual(t, spent, kernel.Cent/2, "the run's budget is never overspent")
	resp := e.do(t, post("/v1/chat/completions", clientKey, body, run("loop-2")), up.upstream)
	require.Equal(t, 200, resp.Status, "another run has a budget of its own")

	bad := e.do(t, post("/v1/chat/completions", clientKey, body, run("bad id")), up.upstream)
	requireOpenAIError(t, bad, wantError{400, translate.TypeInvalidRequest, "invalid_run_id", "", "The x-tollgate-run-id header must be 1 to 128 printable ASCII characters."})
}
