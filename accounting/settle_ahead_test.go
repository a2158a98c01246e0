package accounting_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// killedAfterClose is RedisCounters whose replica dies right after Redis
// closed a reservation: its Settle closes it, then reports whether the spill
// already held the entry (what a restart would replay).
type killedAfterClose struct {
	*accounting.RedisCounters
	spill   *accounting.Spill
	inSpill map[string]bool
}

func (k *killedAfterClose) Settle(ctx context.Context, now time.Time, id string, u kernel.Usage, st kernel.Status) (kernel.Settlement, bool, error) {
	s, ok, err := k.RedisCounters.Settle(ctx, now, id, u, st)
	for _, f := range k.spill.Files() {
		b, rerr := os.ReadFile(f)
		if rerr == nil && strings.Contains(string(b), `"`+id+`"`) {
			k.inSpill[id] = true
		}
	}
	return s, ok, err
}

// TestSettlementIsInTheSpillBeforeRedisClosesIt: with a spill, a settlement
// of a request this replica admitted is written to the spill before Redis
// closes its reservation, so a kill -9 between the two cannot leave the
// request with neither a ledger row nor a reservation left to expire (it
// did: e2e/TestFaultKill9 billed 21,000 n$ more than the ledger held). The
// entry holds the cost Redis then charges.
func TestSettlementIsInTheSpillBeforeRedisClosesIt(t *testing.T) {
	rdb := client(t)
	pfx := prefix(t, rdb)
	st := memstore.New()
	sp, _, err := accounting.OpenSpill(t.Context(), t.TempDir(), st)
	require.NoError(t, err)
	t.Cleanup(sp.Close)
	rc := accounting.NewRedisCounters(rdb, zeroSeed, accounting.WithPrefix(pfx))
	t.Cleanup(rc.Close)
	k := &killedAfterClose{RedisCounters: rc, spill: sp, inSpill: map[string]bool{}}
	a := accounting.NewAccountant(k, st, time.Now, slog.New(slog.DiscardHandler), accounting.WithSpill(sp))

	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-ahead"}
	price := kernel.Price{Input: 1_000_000, Output: 2_000_000}
	d, err := a.Admit(t.Context(), &kernel.AdmitRequest{
		ID: "ahead", Scopes: []kernel.Scope{{Ref: key}}, Model: "m", PromptBytes: 100, MaxTokens: 100, Price: price,
	})
	require.NoError(t, err)
	require.True(t, d.Admitted)
	u := kernel.Usage{Input: 20, Output: 30}
	cost, err := a.Settle(t.Context(), store.LedgerEntry{RequestID: "ahead", KeyID: key.ID, Usage: u, Status: kernel.StatusCompleted})
	require.NoError(t, err)
	require.Equal(t, kernel.Cost(price, u), cost)
	require.True(t, k.inSpill["ahead"], "in the spill before Redis closed the reservation")

	// Settled again (a duplicate): nothing more is charged or recorded.
	again, err := a.Settle(t.Context(), store.LedgerEntry{RequestID: "ahead", KeyID: key.ID, Usage: u, Status: kernel.StatusCompleted})
	require.NoError(t, err)
	require.Zero(t, again)
	require.NoError(t, st.Flush(t.Context()))
	got := ledgerByID(t, st, key)
	require.Len(t, got, 1)
	require.Equal(t, cost, got["ahead"].Cost)
}
