package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestGatewayTags: a key's default tags and a request's own land in the
// ledger; a tag budget from the store stops the tag's traffic at its limit
// with nothing overspent, while the key's untagged traffic goes on.
func TestGatewayTags(t *testing.T) {
	st := memstore.New()
	r := startWith(t, false, st, nil)
	body := `{"model":"demo","messages":[{"role":"user","content":"hello there gateway"}],"max_tokens":5}`
	r.warm(t, r.key(t, "k0", kernel.Limits{}), body)
	sec := secret.New("tg-")
	put(t, st, "search-agent", &store.Key{
		ID: "search-agent", Prefix: secret.Display(sec), Hashes: []store.KeyHash{{Hash: secret.Hash(sec)}},
		Tags: map[string]string{"team": "search", "env": "prod"},
	})
	limit := 100 * kernel.MicroUSD
	put(t, st, "feature=search", &store.TagBudget{ID: "feature=search", Limits: kernel.Limits{
		Budgets: []kernel.BudgetWindow{{Limit: limit, Period: kernel.Period{Kind: kernel.PeriodMonthly}}},
	}})
	call := func(tags string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("authorization", "Bearer "+sec)
		req.Header.Set("content-type", "application/json")
		if tags != "" {
			req.Header.Set("x-tollgate-tags", tags)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	eventually(t, func() bool { c, _ := call(""); return c == http.StatusOK })
	passed, refused := 0, 0
	for range 50 {
		code, b := call("feature=search,env=staging")
		if code != http.StatusOK {
			require.Contains(t, b, "Budget exceeded for the tag feature=search.")
			refused++
			continue
		}
		require.Zero(t, refused, "once refused, the tag stays refused")
		passed++
	}
	require.Positive(t, passed)
	require.Positive(t, refused)
	code, _ := call("feature=chat")
	require.Equal(t, http.StatusOK, code, "another feature has no budget")

	require.NoError(t, st.Flush(t.Context()))
	tag := kernel.ScopeRef{Kind: kernel.ScopeTag, ID: "feature=search"}
	rows, err := st.Entries(t.Context(), store.LedgerFilter{Scope: &tag, Limit: 100})
	require.NoError(t, err)
	require.Len(t, rows, passed)
	var spent kernel.Money
	for _, e := range rows {
		require.Equal(t, []string{"env=staging", "feature=search", "team=search"}, e.Tags, "the request's env wins over the key's")
		spent += e.Cost
	}
	require.LessOrEqual(t, spent, limit, "the tag's budget is never overspent")
	got, err := st.ScopeSpend(t.Context(), tag, rows[0].EndedAt.Add(-1e12), rows[0].EndedAt.Add(1e12))
	require.NoError(t, err)
	require.Equal(t, spent, got, "spend by tag from the hourly totals")
}
