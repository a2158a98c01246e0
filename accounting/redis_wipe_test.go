package accounting_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// queuedLedger is one replica's ledger writer over the shared ledger: what it
// appends is queued, and reaches the ledger (and ScopeSpend) only at Flush,
// as with the group-commit writer of PostgreSQL.
type queuedLedger struct {
	*memstore.Store // the shared ledger
	mu              sync.Mutex
	queue           []store.LedgerEntry
}

func (q *queuedLedger) Append(_ context.Context, entries ...store.LedgerEntry) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue = append(q.queue, entries...)
	return nil
}

func (q *queuedLedger) Flush(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.Store.Append(ctx, q.queue...); err != nil {
		return err
	}
	q.queue = nil
	return q.Store.Flush(ctx)
}

// TestRedisWipeKeepsStrictBudget: two replicas hold open reservations, and
// each one settlement its ledger writer has not committed yet, when Redis is
// wiped (FLUSHALL). Admitting up to the budget afterwards, from both
// replicas, must not overspend it: the re-seeded windows hold the ledger, the
// uncommitted settlements and the open reservations. Every request is then
// settled at its worst case (the provider billed all it could): the bill is
// at most the budget.
func TestRedisWipeKeepsStrictBudget(t *testing.T) {
	rs := testenv.StartRedis(t)
	shared := memstore.New()
	price := kernel.Price{Input: 1_000_000, Output: 2_000_000}
	const promptBytes, maxTokens = 400, 100
	worst := kernel.Cost(price, kernel.Usage{Input: promptBytes, Output: maxTokens})
	limit := 20 * worst
	lim := &kernel.Limits{
		Mode: kernel.Strict, Shortfall: kernel.Reject,
		Budgets: []kernel.BudgetWindow{{Limit: limit, Period: kernel.Period{Kind: kernel.PeriodTotal}}},
	}
	ref := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-wipe"}

	type replica struct {
		counters *accounting.RedisCounters
		acct     *accounting.Accountant
		ledger   *queuedLedger
	}
	var replicas [2]replica
	for i := range replicas {
		opt, err := goredis.ParseURL(rs.URL)
		require.NoError(t, err)
		rdb := goredis.NewClient(opt)
		t.Cleanup(func() { _ = rdb.Close() })
		ql := &queuedLedger{Store: shared}
		c := accounting.NewRedisCounters(rdb, accounting.LedgerSeed(ql))
		t.Cleanup(c.Close)
		replicas[i] = replica{counters: c, ledger: ql, acct: accounting.NewAccountant(c, ql, time.Now, slog.New(slog.DiscardHandler))}
	}

	var mu sync.Mutex
	bill := kernel.Money(0) // what the provider billed: every request at its worst case
	seq := 0
	admit := func(r int) (string, bool) {
		mu.Lock()
		seq++
		id := fmt.Sprintf("w%d-r%d", seq, r)
		mu.Unlock()
		d, err := replicas[r].acct.Admit(t.Context(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: ref, Limits: lim}}, Model: "m",
			PromptBytes: promptBytes, MaxTokens: maxTokens, Price: price,
		})
		require.NoError(t, err)
		if d.Admitted {
			require.Equal(t, worst, d.Reserved)
		}
		return id, d.Admitted
	}
	settle := func(r int, id string) {
		cost, err := replicas[r].acct.Settle(t.Context(), store.LedgerEntry{
			RequestID: id, KeyID: ref.ID, Model: "m", Usage: kernel.Usage{Input: promptBytes, Output: maxTokens},
			Status: kernel.StatusCompleted, HTTPStatus: 200,
		})
		require.NoError(t, err, "settle %s", id)
		require.Equal(t, worst, cost, id)
		mu.Lock()
		bill += cost
		mu.Unlock()
	}
	syncR := func(r int) {
		require.NoError(t, replicas[r].counters.Sync(t.Context(), time.Now()))
	}

	// Before the wipe: 2 settled and committed, 1 settled and queued, 3 open,
	// on each replica: 12 of the 20 worst costs are spent or held.
	open := map[string]int{}
	for r := range replicas {
		syncR(r)
		for range 6 {
			id, ok := admit(r)
			require.True(t, ok)
			open[id] = r
		}
	}
	for r := range replicas {
		syncR(r) // each knows the other
		n := 0
		for id, rr := range open {
			if rr != r || n == 3 {
				continue
			}
			settle(r, id)
			delete(open, id)
			n++
			if n == 2 {
				require.NoError(t, replicas[r].acct.Flush(t.Context()))
			}
		}
	}

	admin := goredis.NewClient(mustParse(t, rs.URL))
	require.NoError(t, admin.FlushAll(t.Context()).Err())
	require.NoError(t, admin.Close())

	// Replica 0 admits first; replica 1 notices the wipe at its next sync.
	var wg sync.WaitGroup
	wg.Go(func() { syncR(1) })
	for i := 0; ; i++ {
		require.Less(t, i, 100, "the budget ends")
		id, ok := admit(i % 2)
		if !ok {
			break
		}
		open[id] = i % 2
	}
	wg.Wait()
	for id, r := range open {
		settle(r, id)
	}
	for r := range replicas {
		require.NoError(t, replicas[r].acct.Flush(t.Context()))
	}
	spent, err := shared.ScopeSpend(t.Context(), ref, time.Time{}, time.Time{})
	require.NoError(t, err)
	t.Logf("budget %d n$, worst cost %d n$: bill %d n$ (%.1f %%), ledger %d n$",
		limit, worst, bill, 100*float64(bill)/float64(limit), spent)
	require.Equal(t, bill, spent, "Σ ledger == bill")
	require.LessOrEqual(t, bill, limit, "a strict budget holds across a Redis wipe")
	require.GreaterOrEqual(t, bill, limit-2*worst, "the budget is used, up to the double count of a committed settlement")
}

func mustParse(t *testing.T, u string) *goredis.Options {
	t.Helper()
	opt, err := goredis.ParseURL(u)
	require.NoError(t, err)
	return opt
}

// TestRedisWipeDoesNotWaitForADeadReplica: after a wipe, admissions that need
// a window seeded wait for the replicas alive before it to re-register; one
// that died is waited for only until the grace ends.
func TestRedisWipeDoesNotWaitForADeadReplica(t *testing.T) {
	rs := testenv.StartRedis(t)
	lim := &kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 1_000_000, Period: kernel.Period{Kind: kernel.PeriodTotal}}}}
	ref := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-dead"}
	var replicas [2]*accounting.RedisCounters
	for i := range replicas {
		rdb := goredis.NewClient(mustParse(t, rs.URL))
		t.Cleanup(func() { _ = rdb.Close() })
		replicas[i] = accounting.NewRedisCounters(rdb, zeroSeed, accounting.WithRejoinGrace(300*time.Millisecond))
		t.Cleanup(replicas[i].Close)
	}
	admit := func(id string) {
		d, err := replicas[0].Admit(t.Context(), time.Now(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: ref, Limits: lim}}, Model: "m", PromptBytes: 40, MaxTokens: 10,
			Price: kernel.Price{Input: 1_000_000, Output: 1_000_000},
		})
		require.NoError(t, err)
		require.True(t, d.Admitted, d.Reason)
	}
	for range 2 {
		for _, c := range replicas {
			require.NoError(t, c.Sync(t.Context(), time.Now()))
		}
	}
	admit("before")

	admin := goredis.NewClient(mustParse(t, rs.URL))
	require.NoError(t, admin.FlushAll(t.Context()).Err())
	require.NoError(t, admin.Close())
	// Replica 1 is gone (it never syncs again): replica 0 re-registers its
	// reservation, waits out the grace, then seeds and admits.
	admit("after")
	_, reserved, err := replicas[0].Usage(t.Context(), ref, kernel.Period{Kind: kernel.PeriodTotal}, time.Now())
	require.NoError(t, err)
	require.Equal(t, 2*kernel.Cost(kernel.Price{Input: 1_000_000, Output: 1_000_000}, kernel.Usage{Input: 40, Output: 10}), reserved,
		"the reservation open at the wipe is held again, beside the new one")
}
