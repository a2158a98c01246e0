package accounting_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// A request a guardrail refused before admission is a $0 row with status
// refused, whatever cost the caller put in it; the key's budget (spent and
// reserved) and the ledger's total stay as they were, and a repeat is
// written once.
func TestRecordRefused(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	a := accounting.NewLocalAccountant(st, st, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	daily := kernel.Period{Kind: kernel.PeriodDaily}
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}
	limits := &kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: daily}}}
	price := kernel.Price{Input: kernel.Dollar / 1000, Output: kernel.Dollar / 1000}
	d, err := a.Admit(ctx, &kernel.AdmitRequest{ID: "served", Scopes: []kernel.Scope{{Ref: key, Limits: limits}}, MaxTokens: 10, Price: price})
	require.NoError(t, err)
	require.True(t, d.Admitted)
	cost, err := a.Settle(ctx, store.LedgerEntry{RequestID: "served", KeyID: "k", Usage: kernel.Usage{Input: 5, Output: 5}, Status: kernel.StatusCompleted})
	require.NoError(t, err)
	require.Positive(t, cost)
	spent, reserved := a.State().Usage(key, daily, now)

	refused := store.LedgerEntry{RequestID: "refused", KeyID: "k", Model: "gpt-4o", Deployment: "guardrail:pii", HTTPStatus: 400, Cost: kernel.Dollar, StartedAt: now}
	require.NoError(t, a.RecordRefused(ctx, refused))
	require.NoError(t, a.RecordRefused(ctx, refused), "again: one row")
	require.NoError(t, st.Flush(ctx))

	s2, r2 := a.State().Usage(key, daily, now)
	require.Equal(t, spent, s2, "nothing charged")
	require.Equal(t, reserved, r2, "nothing reserved or released")
	rows, err := st.Entries(ctx, store.LedgerFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	var total kernel.Money
	for _, r := range rows {
		total += r.Cost
		if r.RequestID == "refused" {
			require.Equal(t, kernel.StatusRefused, r.Status)
			require.Zero(t, r.Cost)
			require.Equal(t, "guardrail:pii", r.Deployment)
			require.Equal(t, now, r.EndedAt)
		}
	}
	require.Equal(t, cost, total, "the ledger's total is the served request's")
}
