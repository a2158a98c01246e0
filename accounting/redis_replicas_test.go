package accounting_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/postgres"
)

// replica is one gateway replica's accounting: its own Redis client and
// counters, and its own PostgreSQL store (pool and ledger writer).
type replica struct {
	rdb      *goredis.Client
	counters *accounting.RedisCounters
	store    *postgres.Store
}

func newReplica(t testing.TB, redisURL, pgURL, pfx string, opts ...accounting.RedisOption) *replica {
	t.Helper()
	opt, err := goredis.ParseURL(redisURL)
	require.NoError(t, err)
	opt.PoolSize = 64
	// Generous timeouts: the machine running the tests may be loaded (race detector, parallel packages).
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, 10*time.Second, 10*time.Second
	opt.MaxRetries = -1
	rdb := goredis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, pgURL, postgres.WithMaxConns(8), postgres.WithRetryBackoff(20*time.Millisecond))
	require.NoError(t, err)
	r := &replica{rdb: rdb, store: st}
	// Seeding flushes this replica's ledger queue first, so what it settled is counted.
	seed := func(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
		if err := st.Flush(ctx); err != nil {
			return 0, err
		}
		return st.ScopeSpend(ctx, scope, since, until)
	}
	r.counters = accounting.NewRedisCounters(rdb, seed, append([]accounting.RedisOption{accounting.WithPrefix(pfx), accounting.WithTimeout(10 * time.Second)}, opts...)...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r.counters.Close()
		_ = st.Close(ctx)
		_ = rdb.Close()
	})
	return r
}

// settle settles an admitted request in the counters and appends it to the ledger.
func (r *replica) settle(ctx context.Context, now time.Time, id string, key kernel.ScopeRef, u kernel.Usage, price kernel.Price) error {
	_, _, serr := r.counters.Settle(ctx, now, id, u, kernel.StatusCompleted)
	e := store.LedgerEntry{
		RequestID: id, KeyID: key.ID, Model: "m", Deployment: "d", Usage: u, Cost: kernel.Cost(price, u),
		Status: kernel.StatusCompleted, HTTPStatus: 200, StartedAt: now, EndedAt: now,
	}
	if err := r.store.Append(ctx, e); err != nil {
		return err
	}
	return serr
}

func pgDB(t *testing.T) string {
	t.Helper()
	return testenv.CreateDatabase(t, testenv.Postgres(t))
}

// TestReplicasStrictBudget: three replicas, 2,000 concurrent admissions against
// a strict budget that affords exactly 100 requests: exactly 100 are admitted,
// and after settlement through the counters and the ledger, spend = budget.
// Then Redis loses everything; the window is re-seeded from the ledger before
// any admission, so nothing more is admitted.
func TestReplicasStrictBudget(t *testing.T) {
	rdb := client(t)
	pfx := prefix(t, rdb)
	redisURL, pgURL := testenv.Redis(t), pgDB(t)
	reps := []*replica{newReplica(t, redisURL, pgURL, pfx), newReplica(t, redisURL, pgURL, pfx), newReplica(t, redisURL, pgURL, pfx)}
	ctx := t.Context()

	price := kernel.Price{Output: 1_000_000} // 1 nano-USD per output token
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-budget"}
	lim := &kernel.Limits{Shortfall: kernel.Reject, Budgets: []kernel.BudgetWindow{
		{Limit: 1000, Period: kernel.Period{Kind: kernel.PeriodDaily}},
		{Limit: 5000, Period: kernel.Period{Kind: kernel.PeriodTotal}},
	}}
	now := time.Now().UTC()
	var admitted atomic.Int64
	var ids sync.Map
	var wg sync.WaitGroup
	const n = 2000
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			r := reps[i%3]
			id := fmt.Sprintf("b%04d", i)
			d, err := r.counters.Admit(ctx, now, &kernel.AdmitRequest{
				ID: id, Scopes: []kernel.Scope{{Ref: key, Limits: lim}, {Ref: kernel.ScopeRef{Kind: kernel.ScopeGlobal}}},
				Model: "m", MaxTokens: 10, Price: price,
			})
			if err != nil {
				t.Error(err)
				return
			}
			if d.Admitted {
				admitted.Add(1)
				ids.Store(id, r)
			} else if d.Reason != kernel.ReasonBudgetExceeded {
				t.Errorf("unexpected reason %d", d.Reason)
			}
		})
	}
	close(start)
	wg.Wait()
	require.Equal(t, int64(100), admitted.Load())

	// Half the requests are settled by another replica than the one that admitted
	// them (it reads the reservation from Redis).
	i := 0
	ids.Range(func(k, v any) bool {
		r := v.(*replica)
		if i%2 == 1 {
			r = reps[(slices.Index(reps, r)+1)%3]
		}
		i++
		require.NoError(t, r.settle(ctx, now, k.(string), key, kernel.Usage{Output: 10}, price))
		return true
	})
	inFlight, err := reps[0].counters.InFlight(ctx, key)
	require.NoError(t, err)
	require.Zero(t, inFlight)
	for _, r := range reps {
		require.NoError(t, r.store.Flush(ctx))
	}
	spent, reserved, err := reps[0].counters.Usage(ctx, key, kernel.Period{Kind: kernel.PeriodDaily}, now)
	require.NoError(t, err)
	require.Equal(t, kernel.Money(1000), spent)
	require.Zero(t, reserved)
	ledger, err := reps[1].store.ScopeSpend(ctx, key, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(1000), ledger, "spend in the ledger = budget")

	// Redis loses everything: the window must be re-seeded from the ledger.
	deletePrefix(rdb, pfx)
	d, err := reps[2].counters.Admit(ctx, now, &kernel.AdmitRequest{
		ID: "after-flush", Scopes: []kernel.Scope{{Ref: key, Limits: lim}}, Model: "m", MaxTokens: 1, Price: price,
	})
	require.NoError(t, err)
	require.False(t, d.Admitted, "re-seeded from the ledger: the budget is spent")
	require.Equal(t, kernel.ReasonBudgetExceeded, d.Reason)
}

// TestReplicasRPM: an rpm limit of 50 admits 50 across three replicas, not 150.
func TestReplicasRPM(t *testing.T) {
	rdb := client(t)
	pfx := prefix(t, rdb)
	redisURL, pgURL := testenv.Redis(t), pgDB(t)
	reps := []*replica{newReplica(t, redisURL, pgURL, pfx), newReplica(t, redisURL, pgURL, pfx), newReplica(t, redisURL, pgURL, pfx)}
	ctx := t.Context()
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-rpm"}
	lim := &kernel.Limits{RPM: 50}
	now := time.Now().UTC()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 600 {
		wg.Go(func() {
			d, err := reps[i%3].counters.Admit(ctx, now, &kernel.AdmitRequest{
				ID: fmt.Sprintf("q%d", i), Scopes: []kernel.Scope{{Ref: key, Limits: lim}}, Model: "m", MaxTokens: 1,
			})
			if err != nil {
				t.Error(err)
				return
			}
			if d.Admitted {
				admitted.Add(1)
			} else if d.Reason != kernel.ReasonRequestLimit || d.RetryAfter <= 0 {
				t.Errorf("unexpected decision %+v", d)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(50), admitted.Load())
}
