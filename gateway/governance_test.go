package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/alert"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestGatewayGovernance: through the whole gateway, a key with a soft budget
// and a run policy — the soft budget warns and never refuses, the run's
// budget stops its loop, the ledger names the run, and the budget alert
// reaches a signed webhook once.
func TestGatewayGovernance(t *testing.T) {
	secret := []byte("whsec")
	hook, counts := signedReceiver(t, secret)
	st := memstore.New()
	n := &alert.Notifier{Claimer: &alert.MemoryClaimer{}, Audit: st, Sinks: []alert.Sink{&alert.Webhook{URL: hook.URL, Secret: secret}}}
	r := startWith(t, false, st, nil, func(_ *gateway.Config, o *gateway.Options) {
		o.Alerts, o.AlertEvery = n, 20*time.Millisecond
	})
	body := `{"model":"demo","messages":[{"role":"user","content":"hello there gateway"}],"max_tokens":5}`
	r.warm(t, r.key(t, "k0", kernel.Limits{}), body)
	key := r.key(t, "agent", kernel.Limits{
		Budgets: []kernel.BudgetWindow{{Limit: 1, Period: kernel.Period{Kind: kernel.PeriodDaily}, Soft: true}},
		Run:     &kernel.RunPolicy{Budget: 100 * kernel.MicroUSD, TTL: time.Hour},
	})
	eventually(t, func() bool { return r.status(key, body) == http.StatusOK })
	r.key(t, "soon", kernel.Limits{ExpiresAt: time.Now().Add(48 * time.Hour)})

	call := func() (*http.Response, []byte) {
		req, err := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("authorization", "Bearer "+key)
		req.Header.Set("content-type", "application/json")
		req.Header.Set("x-tollgate-run-id", "loop-1")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, b
	}
	passed, refused := 0, 0
	for range 50 {
		resp, b := call()
		if resp.StatusCode != http.StatusOK {
			require.Contains(t, string(b), "budget_exceeded")
			refused++
			continue
		}
		require.Zero(t, refused, "once refused, the run stays refused")
		passed++
		require.Contains(t, resp.Header.Get("x-tollgate-budget-warning"), "key:agent daily spent=", "the soft budget of 1 nano-USD is spent")
	}
	require.Positive(t, passed)
	require.Positive(t, refused)

	require.NoError(t, st.Flush(t.Context()))
	run := kernel.ScopeRef{Kind: kernel.ScopeRun, ID: "key:agent/loop-1"}
	rows, err := st.Entries(t.Context(), store.LedgerFilter{Scope: &run, Limit: 100})
	require.NoError(t, err)
	var spent kernel.Money
	for _, e := range rows {
		spent += e.Cost
	}
	require.Len(t, rows, passed, "the ledger names the run of every call")
	require.LessOrEqual(t, spent, 100*kernel.MicroUSD, "the run's budget is never overspent")

	// The soft budget's 50, 80 and 100 % alerts and the key about to
	// expire, once each.
	eventually(t, func() bool { return len(counts()) == 4 })
	expiring := 0
	for id, c := range counts() {
		require.Equal(t, 1, c, id)
		if strings.HasPrefix(id, "expiring|key:soon|") {
			expiring++
		}
	}
	require.Equal(t, 1, expiring)
}
