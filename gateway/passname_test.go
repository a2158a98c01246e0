package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestPassTheNameGroup: a group with UpstreamModelFromRequest and a pattern
// alias serves every name the pattern matches, each priced under its own
// name; a name with no price is refused under a strict budget before the
// provider is called (never charged $0), and served under an estimate budget
// marked unpriced. The group's own name keeps its deployment's model.
func TestPassTheNameGroup(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "mock-any", &store.Deployment{ID: "mock-any", Provider: "mock", ProviderModel: "mock-gpt"})
	put(t, r.st, "openai", &store.ModelGroup{ID: "openai", Deployments: []string{"mock-any"}, Aliases: []string{"gpt-*"}, UpstreamModelFromRequest: true})
	mini := kernel.Price{Input: 150 * kernel.Dollar / 1000, Output: 600 * kernel.Dollar / 1000} // $0.15 / $0.60 per million
	put(t, r.st, "gpt-4o-mini", &store.ModelPrice{ID: "gpt-4o-mini", Price: mini})
	put(t, r.st, "openai", &store.ModelPrice{ID: "openai", Price: kernel.Price{Input: kernel.Dollar, Output: kernel.Dollar}})

	strict := r.key(t, "k-strict", kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}})
	estimate := r.key(t, "k-estimate", kernel.Limits{Mode: kernel.Estimate, Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}})
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hello there"}],"max_tokens":5}`
	}
	r.warm(t, strict, body("gpt-4o-mini"))
	calls := r.mock.Stats().Total.Requests

	resp, b := r.post(t, strict, "/v1/chat/completions", body("gpt-future-9"))
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"code":"model_price_missing"`)
	require.Contains(t, string(b), "`gpt-future-9`")
	require.Equal(t, calls, r.mock.Stats().Total.Requests, "the provider was never called")

	resp, b = r.post(t, estimate, "/v1/chat/completions", body("gpt-future-9"))
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Contains(t, string(b), `"model":"gpt-future-9"`, "the reply names the requested model")

	require.NoError(t, r.st.Flush(context.Background()))
	var miniRow, futureRow *store.LedgerEntry
	for _, e := range completed(t, r.st) {
		switch e.KeyID {
		case "k-strict":
			miniRow = &e
		case "k-estimate":
			futureRow = &e
		}
	}
	require.NotNil(t, miniRow)
	require.Equal(t, kernel.Cost(mini, miniRow.Usage), miniRow.Cost, "priced under the requested name, not the group's price")
	require.Positive(t, miniRow.Cost)
	require.Equal(t, "openai", miniRow.Model, "the group")
	require.Equal(t, "gpt-4o-mini", miniRow.RequestedModel, "the client's name beside it")
	require.NotNil(t, futureRow)
	require.True(t, futureRow.Unpriced)
}
