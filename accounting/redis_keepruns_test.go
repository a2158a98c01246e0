package accounting_test

import (
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestRunHashKeptWhileASettlementIsUncommitted: replica A settled a call of a
// run, its ledger writer has not committed it, and the run's hash reaches the
// end of its TTL. Were it to expire, replica B's next call of the run would
// seed it from a ledger that misses A's settlement and overspend the run's
// budget (the spin model's -DEARLYRUNEXP). A's Sync keeps the hash until its
// ledger confirmed the settlement; then the hash may expire, and the ledger
// seeds it with A's settlement in.
func TestRunHashKeptWhileASettlementIsUncommitted(t *testing.T) {
	rdb := client(t)
	pfx := prefix(t, rdb)
	shared := memstore.New()
	type rep struct {
		counters *accounting.RedisCounters
		acct     *accounting.Accountant
		ledger   *queuedLedger
	}
	var a, b rep
	for _, r := range []*rep{&a, &b} {
		r.ledger = &queuedLedger{Store: shared}
		r.counters = accounting.NewRedisCounters(rdb, accounting.LedgerSeed(r.ledger), accounting.WithPrefix(pfx))
		t.Cleanup(r.counters.Close)
		r.acct = accounting.NewAccountant(r.counters, r.ledger, time.Now, slog.New(slog.DiscardHandler))
		require.NoError(t, r.counters.Sync(t.Context(), time.Now()))
	}
	price := kernel.Price{Output: 1_000_000} // 1 nano-USD per output token
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-keep"}
	run := kernel.Scope{
		Ref: kernel.ScopeRef{Kind: kernel.ScopeRun, ID: kernel.RunScopeID(key, "loop")},
		Limits: &kernel.Limits{
			Shortfall: kernel.Reject, TTL: time.Hour,
			Budgets: []kernel.BudgetWindow{{Limit: 15, Period: kernel.Period{Kind: kernel.PeriodTotal}}},
		},
	}
	runKey := "{" + pfx + "}:s:" + strconv.Itoa(int(kernel.ScopeRun)) + ":" + run.Ref.ID
	admit := func(r *rep, id string) kernel.Decision {
		d, err := r.acct.Admit(t.Context(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: key, Limits: &kernel.Limits{Shortfall: kernel.Reject}}, run}, Model: "m", MaxTokens: 10, Price: price,
		})
		require.NoError(t, err)
		return d
	}
	// nearlyExpired makes the run's hash reach the end of its TTL (an hour
	// and a minute of real time in production).
	nearlyExpired := func() {
		require.NoError(t, rdb.PExpire(t.Context(), runKey, 200*time.Millisecond).Err())
	}

	require.True(t, admit(&a, "call-1").Admitted)
	cost, err := a.acct.Settle(t.Context(), store.LedgerEntry{
		RequestID: "call-1", KeyID: key.ID, RunID: run.Ref.ID, Model: "m", Usage: kernel.Usage{Output: 10},
		Status: kernel.StatusCompleted, HTTPStatus: 200,
	})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(10), cost)
	require.Equal(t, 1, a.acct.Pending(), "the settlement is queued, not committed")

	nearlyExpired()
	require.NoError(t, a.counters.Sync(t.Context(), time.Now()))
	ttl, err := rdb.PTTL(t.Context(), runKey).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 30*time.Second, "A's Sync keeps the hash of a run it holds an uncommitted settlement of")
	time.Sleep(300 * time.Millisecond)
	d := admit(&b, "call-2")
	require.False(t, d.Admitted, "the run's budget holds A's uncommitted settlement: 10 + 10 > 15")
	require.Equal(t, kernel.ReasonBudgetExceeded, d.Reason)
	require.Equal(t, run.Ref, d.Scope)

	// Committed: no longer kept; expired, the run is seeded from the ledger,
	// which holds the settlement.
	require.NoError(t, a.acct.Flush(t.Context()))
	require.NoError(t, a.counters.Sync(t.Context(), time.Now()))
	nearlyExpired()
	require.NoError(t, a.counters.Sync(t.Context(), time.Now()))
	require.Eventually(t, func() bool { return rdb.Exists(t.Context(), runKey).Val() == 0 }, 5*time.Second, 50*time.Millisecond,
		"the hash of a run with nothing uncommitted expires")
	d = admit(&b, "call-3")
	require.False(t, d.Admitted, "seeded from the ledger: A's settlement is in it")
	require.Equal(t, run.Ref, d.Scope)
}
