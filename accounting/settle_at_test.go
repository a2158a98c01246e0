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

// TestSettleAt: a request admitted at one price (a pass-through call's
// price per call) and settled at another (the model its reply named) is
// charged at the second, in the counters and the ledger, with local and
// Redis counters alike.
func TestSettleAt(t *testing.T) {
	for _, c := range []struct {
		name     string
		counters func(t *testing.T) accounting.Counters
	}{
		{"local", func(*testing.T) accounting.Counters { return accounting.LocalCounters{State: kernel.NewState()} }},
		{"redis", func(t *testing.T) accounting.Counters {
			rdb := client(t)
			rc := accounting.NewRedisCounters(rdb, zeroSeed, accounting.WithPrefix(prefix(t, rdb)))
			t.Cleanup(rc.Close)
			return rc
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := memstore.New()
			a := accounting.NewAccountant(c.counters(t), st, time.Now, slog.New(slog.DiscardHandler))
			key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-" + c.name}
			ctx := context.Background()
			d, err := a.Admit(ctx, &kernel.AdmitRequest{
				ID: "call-" + c.name, Scopes: []kernel.Scope{{Ref: key}}, Model: "m", PromptBytes: 1, DefaultMaxTokens: 1,
				Price: kernel.Price{Input: 7_000 * 1_000_000},
			})
			require.NoError(t, err)
			require.True(t, d.Admitted)
			served := kernel.Price{Input: 3 * kernel.Dollar, Output: 5 * kernel.Dollar}
			u := kernel.Usage{Input: 1234, Output: 56}
			cost, err := a.SettleAt(ctx, store.LedgerEntry{RequestID: "call-" + c.name, KeyID: key.ID, Usage: u, Status: kernel.StatusCompleted, HTTPStatus: 200}, served)
			require.NoError(t, err)
			require.Equal(t, kernel.Cost(served, u), cost)
			require.NotEqual(t, kernel.Cost(kernel.Price{Input: 7_000 * 1_000_000}, u), cost)
			require.NoError(t, st.Flush(ctx))
			rows, err := st.Entries(ctx, store.LedgerFilter{Limit: 10})
			require.NoError(t, err)
			require.Len(t, rows, 1)
			require.Equal(t, cost, rows[0].Cost)
		})
	}
}
