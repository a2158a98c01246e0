package accounting_test

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestLeaseConfigurable: a reservation left unsettled (its replica crashed)
// is settled by expiry once the configured lease ends — not the 15-minute
// default — and its parallel slot is free again. A request whose settlement
// already reached the ledger (replayed from a crashed replica's spill) keeps
// that row: the expiry adds nothing to the ledger.
func TestLeaseConfigurable(t *testing.T) {
	st := memstore.New()
	clk := &clock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	a := accounting.NewLocalAccountant(st, st, clk.now, slog.New(slog.DiscardHandler), accounting.WithLease(time.Minute))
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-lease"}
	lim := &kernel.Limits{MaxParallel: 2}
	price := kernel.Price{Input: 1_000_000, Output: 1_000_000}
	admit := func(id string) kernel.Decision {
		d, err := a.Admit(t.Context(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: key, Limits: lim}}, Model: "m", PromptBytes: 100, MaxTokens: 100, Price: price,
		})
		require.NoError(t, err)
		return d
	}
	require.True(t, admit("lost").Admitted)
	require.True(t, admit("replayed").Admitted)
	require.False(t, admit("third").Admitted, "both parallel slots held")
	// The crashed replica's spill put "replayed" in the ledger at restart.
	require.NoError(t, st.Append(t.Context(), store.LedgerEntry{
		RequestID: "replayed", KeyID: key.ID, Model: "m", Usage: kernel.Usage{Input: 25, Output: 10},
		Cost: 35, Status: kernel.StatusCompleted, HTTPStatus: 200,
	}))

	clk.add(59 * time.Second)
	a.ExpireNow(t.Context())
	require.False(t, admit("third").Admitted, "the lease has not ended")
	clk.add(2 * time.Second)
	a.ExpireNow(t.Context())
	require.True(t, admit("fourth").Admitted, "slots free after the configured lease")

	got := ledgerByID(t, st, key)
	require.Len(t, got, 2)
	require.Equal(t, kernel.StatusExpired, got["lost"].Status)
	require.Equal(t, kernel.Cost(price, kernel.Usage{Input: 100, Output: 100}), got["lost"].Cost, "worst case: nothing else is known")
	require.Equal(t, kernel.StatusCompleted, got["replayed"].Status, "the ledger's own row stands")
	require.Equal(t, kernel.Money(35), got["replayed"].Cost)
}

// ledgerByID is the ledger's rows of key, by request id.
func ledgerByID(t *testing.T, st *memstore.Store, key kernel.ScopeRef) map[string]store.LedgerEntry {
	t.Helper()
	rows, err := st.Entries(t.Context(), store.LedgerFilter{Scope: &key})
	require.NoError(t, err)
	got := map[string]store.LedgerEntry{}
	for _, e := range rows {
		got[e.RequestID] = e
	}
	return got
}
