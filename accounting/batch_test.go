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

// A batch is admitted as one reservation of its worst case; settling it
// charges the lines that ran, releases the rest, and records each line once.
func TestSettleBatch(t *testing.T) {
	st := memstore.New()
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	a := accounting.NewLocalAccountant(st, st, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	daily := kernel.Period{Kind: kernel.PeriodDaily}
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}
	limits := &kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar, Period: daily}}, Shortfall: kernel.Reject}
	price := kernel.Price{Input: kernel.Dollar / 2, Output: kernel.Dollar} // a batch price
	admit := func(id string, maxTokens int64) kernel.Decision {
		d, err := a.Admit(context.Background(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: key, Limits: limits}}, PromptBytes: 1000, MaxTokens: maxTokens, Price: price, Lease: 26 * time.Hour,
		})
		require.NoError(t, err)
		return d
	}

	// A strict budget refuses a batch it cannot cover: 2M output tokens at $1/M.
	require.False(t, admit("too-big", 2_000_000).Admitted)
	require.True(t, admit("b1", 100_000).Admitted)
	_, reserved := a.State().Usage(key, daily, now)
	require.Positive(t, reserved)

	entries := []store.LedgerEntry{
		{RequestID: "batch_1/a", KeyID: "k", Usage: kernel.Usage{Input: 10, Output: 20}, Cost: kernel.Cost(price, kernel.Usage{Input: 10, Output: 20}), EndedAt: now, HTTPStatus: 200},
		{RequestID: "batch_1/b", KeyID: "k", Usage: kernel.Usage{Input: 30, Output: 40}, Cost: kernel.Cost(price, kernel.Usage{Input: 30, Output: 40}), EndedAt: now, HTTPStatus: 200},
	}
	require.NoError(t, a.SettleBatch(context.Background(), "b1", entries))
	require.NoError(t, a.SettleBatch(context.Background(), "b1", entries), "again: nothing more")
	require.NoError(t, st.Flush(context.Background()))
	spent, reserved := a.State().Usage(key, daily, now)
	require.Zero(t, reserved, "the rest released")
	require.Equal(t, kernel.Cost(price, kernel.Usage{Input: 40, Output: 60}), spent)
	rows, err := st.Entries(context.Background(), store.LedgerFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 2)
}
