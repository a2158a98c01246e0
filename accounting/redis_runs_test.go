package accounting_test

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestReplicasRunBudget: an agent's loop of 50 calls, five at a time, spread
// over three replicas, against its run's budget (one level below the key):
// the run stops at its limit with nothing overspent, the key's other runs
// are not touched, and a run whose counters expired in Redis is seeded from
// the ledger again.
func TestReplicasRunBudget(t *testing.T) {
	rdb := client(t)
	pfx := prefix(t, rdb)
	redisURL, pgURL := testenv.Redis(t), pgDB(t)
	reps := []*replica{newReplica(t, redisURL, pgURL, pfx), newReplica(t, redisURL, pgURL, pfx), newReplica(t, redisURL, pgURL, pfx)}
	ctx := t.Context()

	price := kernel.Price{Output: 1_000_000} // 1 nano-USD per output token
	key := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-agent"}, Limits: &kernel.Limits{
		Shortfall: kernel.Reject, Run: &kernel.RunPolicy{Budget: 125, RPM: 1000, TTL: time.Hour},
	}}
	runScope := func(id string) kernel.Scope {
		return kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeRun, ID: kernel.RunScopeID(key.Ref, id)}, Limits: key.Limits.Run.Limits()}
	}
	global := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeGlobal}}
	run := runScope("loop-1")
	now := time.Now().UTC()
	call := func(r *replica, id string, sc kernel.Scope) (kernel.Decision, error) {
		return r.counters.Admit(ctx, now, &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{key, sc, global}, Model: "m", MaxTokens: 10, Price: price,
		})
	}
	settle := func(r *replica, id string, sc kernel.Scope) error {
		s, ok, err := r.counters.Settle(ctx, now, id, kernel.Usage{Output: 10}, kernel.StatusCompleted)
		if err != nil || !ok {
			return fmt.Errorf("settle %s: ok=%v: %w", id, ok, err)
		}
		return r.store.Append(ctx, store.LedgerEntry{
			RequestID: id, KeyID: key.Ref.ID, RunID: sc.Ref.ID, Model: "m", Deployment: "d", Usage: kernel.Usage{Output: 10},
			Cost: s.Cost, Status: kernel.StatusCompleted, HTTPStatus: 200, StartedAt: now, EndedAt: now,
		})
	}

	// The loop: 10 rounds of 5 concurrent calls, each on another replica.
	var admitted atomic.Int64
	for round := range 10 {
		var wg sync.WaitGroup
		for j := range 5 {
			wg.Go(func() {
				i := round*5 + j
				r := reps[i%3]
				id := fmt.Sprintf("call-%02d", i)
				d, err := call(r, id, run)
				if err != nil {
					t.Error(err)
					return
				}
				if !d.Admitted {
					if d.Reason != kernel.ReasonBudgetExceeded || d.Scope != run.Ref {
						t.Errorf("%s: refused by %v for %v, not by the run's budget", id, d.Scope, d.Reason)
					}
					return
				}
				admitted.Add(1)
				if err := settle(reps[(i+1)%3], id, run); err != nil { // settled by another replica
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	require.Equal(t, int64(12), admitted.Load(), "10 nano-USD a call: 12 fit in 125")
	for _, r := range reps {
		require.NoError(t, r.store.Flush(ctx))
	}
	total := kernel.Period{Kind: kernel.PeriodTotal}
	spent, reserved, err := reps[0].counters.Usage(ctx, run.Ref, total, now)
	require.NoError(t, err)
	require.Equal(t, kernel.Money(120), spent)
	require.Zero(t, reserved)
	acct := accounting.NewAccountant(reps[2].counters, reps[2].store, time.Now, slog.New(slog.DiscardHandler))
	got, err := acct.Usage(ctx, run.Ref, total, now)
	require.NoError(t, err)
	require.Equal(t, kernel.Money(120), got, "what budget alerts read")
	ledger, err := reps[1].store.ScopeSpend(ctx, run.Ref, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(120), ledger, "the ledger charges the run")
	rows, err := reps[1].store.Entries(ctx, store.LedgerFilter{Scope: &run.Ref, Limit: 100})
	require.NoError(t, err)
	require.Len(t, rows, 12)

	// The run's hash carries the run's TTL (at least the lease, plus a minute).
	ttl, err := rdb.TTL(ctx, "{"+pfx+"}:s:"+fmt.Sprint(int(kernel.ScopeRun))+":"+run.Ref.ID).Result()
	require.NoError(t, err)
	require.Greater(t, ttl, 59*time.Minute)
	require.LessOrEqual(t, ttl, 61*time.Minute)

	// Another run of the same key has its own budget.
	d, err := call(reps[2], "other-run", runScope("loop-2"))
	require.NoError(t, err)
	require.True(t, d.Admitted)

	// The run's counters expire (as Redis does after the TTL): the next call
	// seeds the run from the ledger and is still refused.
	require.NoError(t, rdb.Del(ctx, "{"+pfx+"}:s:"+fmt.Sprint(int(kernel.ScopeRun))+":"+run.Ref.ID).Err())
	d, err = call(reps[0], "after-expiry", run)
	require.NoError(t, err)
	require.False(t, d.Admitted, "seeded from the ledger: the run's budget is spent")
	require.Equal(t, run.Ref, d.Scope)
}

// localRun is an in-process accountant over ledger (spend: ms) and a run of
// key "k" with a budget of 35 and a TTL of an hour; call admits a call of 10
// on the run and settles it when admitted.
type localRun struct {
	a   *accounting.Accountant
	run kernel.Scope
	now time.Time
}

func newLocalRun(ledger store.Ledger, ms *memstore.Store) *localRun {
	r := &localRun{now: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	r.a = accounting.NewLocalAccountant(ledger, ms, func() time.Time { return r.now }, slog.New(slog.DiscardHandler))
	pol := kernel.RunPolicy{Budget: 35, TTL: time.Hour}
	r.run = kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeRun, ID: kernel.RunScopeID(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}, "r")}, Limits: pol.Limits()}
	return r
}

func (r *localRun) call(t *testing.T, id string) kernel.Decision {
	t.Helper()
	key := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}, Limits: &kernel.Limits{Shortfall: kernel.Reject}}
	d, err := r.a.Admit(t.Context(), &kernel.AdmitRequest{
		ID: id, Scopes: []kernel.Scope{key, r.run}, Model: "m", MaxTokens: 10, Price: kernel.Price{Output: 1_000_000},
	})
	require.NoError(t, err)
	if d.Admitted {
		_, err := r.a.Settle(t.Context(), store.LedgerEntry{RequestID: id, KeyID: "k", RunID: r.run.Ref.ID, Usage: kernel.Usage{Output: 10}, Status: kernel.StatusCompleted})
		require.NoError(t, err)
	}
	return d
}

// TestLocalRunForgottenThenSeeded: the in-process accountant forgets a run
// idle for its TTL and, when the run comes back, seeds its budget from the
// ledger: the run stays stopped.
func TestLocalRunForgottenThenSeeded(t *testing.T) {
	ms := memstore.New()
	r := newLocalRun(ms, ms)
	ctx := t.Context()
	for i := range 3 {
		require.True(t, r.call(t, fmt.Sprint("a", i)).Admitted)
	}
	require.False(t, r.call(t, "a3").Admitted, "30 of 35 spent: 10 more does not fit")
	require.NoError(t, ms.Flush(ctx))
	r.now = r.now.Add(2 * time.Hour)
	r.a.ExpireNow(ctx)
	require.False(t, r.a.State().Known(r.run.Ref), "forgotten after its TTL")
	d := r.call(t, "b0")
	require.False(t, d.Admitted, "seeded from the ledger")
	require.Equal(t, r.run.Ref, d.Scope)
	spent, _ := r.a.State().Usage(r.run.Ref, kernel.Period{Kind: kernel.PeriodTotal}, r.now)
	require.Equal(t, kernel.Money(30), spent)
	got, err := r.a.Usage(ctx, r.run.Ref, kernel.Period{Kind: kernel.PeriodTotal}, r.now)
	require.NoError(t, err)
	require.Equal(t, kernel.Money(30), got, "what budget alerts read")
}

// TestLocalRunSeedSeesQueuedSettlements: the in-process accountant forgets a
// run idle for its TTL while the run's settlements are still queued in the
// ledger writer (not committed: PostgreSQL slow or down); the run's next call
// seeds it from the ledger, which must hold them, or the run overspends.
func TestLocalRunSeedSeesQueuedSettlements(t *testing.T) {
	ms := memstore.New()
	r := newLocalRun(&queuedLedger{Store: ms}, ms)
	for i := range 3 {
		require.True(t, r.call(t, fmt.Sprint("a", i)).Admitted)
	}
	require.Equal(t, 3, r.a.Pending(), "the three settlements are queued, not committed")
	r.now = r.now.Add(2 * time.Hour)
	r.a.ExpireNow(t.Context())
	require.False(t, r.a.State().Known(r.run.Ref), "forgotten after its TTL")
	d := r.call(t, "b0")
	require.False(t, d.Admitted, "the seed holds the queued settlements: 30 of 35 spent")
	require.Equal(t, r.run.Ref, d.Scope)
	spent, _ := r.a.State().Usage(r.run.Ref, kernel.Period{Kind: kernel.PeriodTotal}, r.now)
	require.Equal(t, kernel.Money(30), spent)
}
