package accounting_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// fullLedger is a ledger whose queue is full while full is set: Append fails
// (as groupcommit.Writer's does once its context ends, PostgreSQL down for
// long), Flush succeeds.
type fullLedger struct {
	*memstore.Store
	full atomic.Bool
}

func (l *fullLedger) Append(ctx context.Context, entries ...store.LedgerEntry) error {
	if l.full.Load() {
		return store.ErrQueueFull
	}
	return l.Store.Append(ctx, entries...)
}

func (l *fullLedger) Flush(context.Context) error { return nil }

// TestSpilledSettlementWhoseAppendFailedIsKept: a settlement written to the
// spill whose ledger append then fails (the queue full, PostgreSQL down for
// long) is the only copy of that row. The next checkpoint that succeeds must
// not delete it with the files the flush confirmed: it is queued again and
// reaches the ledger, and a replay after a crash would still find it.
func TestSpilledSettlementWhoseAppendFailedIsKept(t *testing.T) {
	ledger := &fullLedger{Store: memstore.New()}
	dir := t.TempDir()
	sp, _, err := accounting.OpenSpill(t.Context(), dir, ledger)
	require.NoError(t, err)
	defer sp.Drop()
	a := accounting.NewLocalAccountant(ledger, ledger.Store, time.Now, slog.New(slog.DiscardHandler), accounting.WithSpill(sp))
	settle := func(id string) error {
		d, err := a.Admit(t.Context(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: spillKey, Limits: &kernel.Limits{}}}, Model: "m", PromptBytes: 4000,
			Price: kernel.Price{Input: 1_000_000},
		})
		require.NoError(t, err)
		require.True(t, d.Admitted)
		_, err = a.Settle(t.Context(), store.LedgerEntry{
			RequestID: id, KeyID: spillKey.ID, Model: "m", Usage: kernel.Usage{Input: 1000}, Status: kernel.StatusCompleted,
		})
		return err
	}
	require.NoError(t, settle("before"))
	ledger.full.Store(true)
	require.ErrorIs(t, settle("refused"), store.ErrQueueFull, "the caller hears the append failed")
	ledger.full.Store(false)
	require.NoError(t, settle("after"))

	require.NoError(t, a.Flush(t.Context()))
	require.NoError(t, a.Flush(t.Context()))
	rows, err := ledger.Entries(t.Context(), store.LedgerFilter{Scope: &spillKey, Limit: 10})
	require.NoError(t, err)
	ids := map[string]kernel.Money{}
	for _, e := range rows {
		ids[e.RequestID] = e.Cost
	}
	require.Equal(t, map[string]kernel.Money{"before": 1000, "refused": 1000, "after": 1000}, ids,
		"the settlement whose append failed reaches the ledger")
	require.Zero(t, a.Pending())
	require.Len(t, sp.Files(), 1, "then its file goes too")

	// A graceful shutdown while such an entry waits: Drop keeps its file,
	// and the next process replays it.
	ledger.full.Store(true)
	require.ErrorIs(t, settle("at-shutdown"), store.ErrQueueFull)
	ledger.full.Store(false)
	sp.Drop()
	sp2, replayed, err := accounting.OpenSpill(t.Context(), dir, ledger)
	require.NoError(t, err)
	defer sp2.Drop()
	require.Equal(t, 1, replayed)
	rows, err = ledger.Entries(t.Context(), store.LedgerFilter{Scope: &spillKey, Limit: 10})
	require.NoError(t, err)
	require.Len(t, rows, 4)
}
