package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestUnpricedModelNeverASilentZero is the scenario end to end: a
// deployment whose model has no price is refused under a strict budget
// (however small) before the provider is called, served under an estimate
// budget with its ledger row marked unpriced and counted in
// tollgate_unpriced_requests_total, and a deployment declared free is served
// under the strict budget as a real $0. A provider name the price table
// knows under another spelling (Gemini's models/ prefix) is priced.
func TestUnpricedModelNeverASilentZero(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "mock-mystery", &store.Deployment{ID: "mock-mystery", Provider: "mock", ProviderModel: "mystery-model"})
	put(t, r.st, "mystery", &store.ModelGroup{ID: "mystery", Deployments: []string{"mock-mystery"}})
	put(t, r.st, "mock-free", &store.Deployment{ID: "mock-free", Provider: "mock", ProviderModel: "local-llama", Free: true})
	put(t, r.st, "gratis", &store.ModelGroup{ID: "gratis", Deployments: []string{"mock-free"}})

	strict := r.key(t, "k-strict", kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 1000, Period: kernel.Period{Kind: kernel.PeriodTotal}}}}) // $0.000001
	estimate := r.key(t, "k-estimate", kernel.Limits{Mode: kernel.Estimate, Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}})
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}],"max_tokens":5}`
	}
	r.warm(t, r.key(t, "k-warm", kernel.Limits{}), body("gratis"))
	calls := r.mock.Stats().Total.Requests

	for range 3 { // the issue saw three admissions in a row
		resp, b := r.post(t, strict, "/v1/chat/completions", body("mystery"))
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
		require.Contains(t, string(b), `"code":"model_price_missing"`)
		require.Contains(t, string(b), "`mystery` (served as `mystery-model`) has no price")
	}
	require.Equal(t, calls, r.mock.Stats().Total.Requests, "the provider was never called")

	resp, b := r.post(t, strict, "/v1/chat/completions", body("gratis"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	resp, b = r.post(t, estimate, "/v1/chat/completions", body("mystery"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))

	require.NoError(t, r.st.Flush(context.Background()))
	byKey := map[string]store.LedgerEntry{}
	for _, e := range completed(t, r.st) {
		byKey[e.KeyID] = e
	}
	require.Len(t, byKey, 3, "warm-up, free and estimate; the strict refusals left no row")
	require.True(t, byKey["k-estimate"].Unpriced)
	require.Zero(t, byKey["k-estimate"].Cost)
	require.Positive(t, byKey["k-estimate"].Usage.Output)
	require.False(t, byKey["k-strict"].Unpriced, "free is a price that says $0")
	require.Zero(t, byKey["k-strict"].Cost)

	m := scrape(t, "http://"+r.g.MetricsAddr+"/metrics")
	require.InDelta(t, 1.0, m[`tollgate_unpriced_requests_total{deployment="mock-mystery",model_group="mystery"}`], 0)
	require.InDelta(t, 3.0, m[`tollgate_admission_refusals_total{reason="unpriced"}`], 0)
}
