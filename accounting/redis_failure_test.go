package accounting_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestOutages runs a load against private Redis and PostgreSQL servers and,
// in the middle of it, stops PostgreSQL (admission goes on from Redis,
// settlements wait in the ledger queue), then Redis (fail closed: nothing is
// admitted), starts Redis again empty (nothing is admitted until the window is
// re-seeded, which needs PostgreSQL), then PostgreSQL. Afterwards: never more
// admitted than the budget affords, and every settled request is in the ledger
// exactly once with its cost.
func TestOutages(t *testing.T) {
	if testing.Short() {
		t.Skip("starts private servers")
	}
	pg := testenv.StartPostgres(t)
	rs := testenv.StartRedis(t)
	r := newReplica(t, rs.URL, pg.URL, "out")
	ctx := t.Context()

	const perRequest, affordable = 10, 1500
	price := kernel.Price{Output: 1_000_000}
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-out"}
	lim := &kernel.Limits{Shortfall: kernel.Reject, MaxParallel: 6, Budgets: []kernel.BudgetWindow{
		{Limit: perRequest * affordable, Period: kernel.Period{Kind: kernel.PeriodTotal}},
	}}

	var (
		phase     atomic.Int32
		admitted  [6]atomic.Int64 // per phase
		unavail   atomic.Int64
		exhausted atomic.Bool
		settled   sync.Map
		seq       atomic.Int64
		inFlight  atomic.Int64
		maxFlight atomic.Int64
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				id := fmt.Sprintf("o%06d", seq.Add(1))
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				now := time.Now()
				d, err := r.counters.Admit(actx, now, &kernel.AdmitRequest{
					ID: id, Scopes: []kernel.Scope{{Ref: key, Limits: lim}}, Model: "m", MaxTokens: perRequest, Price: price,
				})
				cancel()
				if err != nil {
					if !errors.Is(err, accounting.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("admit: %v", err)
						return
					}
					unavail.Add(1)
					continue
				}
				if !d.Admitted {
					if d.Reason == kernel.ReasonBudgetExceeded {
						exhausted.Store(true)
					}
					continue
				}
				admitted[phase.Load()].Add(1)
				f := inFlight.Add(1)
				for m := maxFlight.Load(); f > m && !maxFlight.CompareAndSwap(m, f); m = maxFlight.Load() {
				}
				inFlight.Add(-1) // before Settle frees the slot, so inFlight never overstates
				sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err = r.settle(sctx, time.Now(), id, key, kernel.Usage{Output: perRequest}, price)
				cancel()
				if err != nil && !errors.Is(err, accounting.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("settle: %v", err)
				}
				settled.Store(id, true)
			}
		})
	}
	step := func(p int32, what string, f func()) {
		time.Sleep(400 * time.Millisecond)
		f()
		phase.Store(p)
		t.Logf("phase %d: %s (admitted so far %d, unavailable %d)", p, what, total(&admitted), unavail.Load())
	}
	step(1, "PostgreSQL stopped", func() { pg.Stop(t) })
	step(2, "Redis stopped", rs.Stop)
	time.Sleep(100 * time.Millisecond) // requests in flight at the stop end
	phase.Store(3)
	step(4, "Redis started empty", func() { rs.Start(t) })
	step(5, "PostgreSQL started", func() { pg.Start(t) })
	deadline := time.Now().Add(30 * time.Second)
	for !exhausted.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	require.True(t, exhausted.Load(), "the budget was used up after recovery")

	t.Logf("admitted per phase: normal %d, pg down %d, both down %d, redis back %d, recovered %d; unavailable %d",
		admitted[0].Load(), admitted[1].Load(), admitted[2].Load()+admitted[3].Load(), admitted[4].Load(),
		admitted[5].Load(), unavail.Load())
	require.Positive(t, admitted[1].Load(), "admission continues while PostgreSQL is down")
	require.Zero(t, admitted[3].Load(), "fail closed while Redis is down")
	require.Zero(t, admitted[4].Load(), "no admission before re-seeding from the ledger")
	require.Positive(t, admitted[5].Load())
	all := total(&admitted)
	require.LessOrEqual(t, all, int64(affordable), "never more than the budget affords")
	require.LessOrEqual(t, maxFlight.Load(), lim.MaxParallel)

	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, r.store.Flush(fctx))
	var n int
	settled.Range(func(any, any) bool { n++; return true })
	require.Equal(t, all, int64(n))
	spent, err := r.store.ScopeSpend(ctx, key, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(perRequest*all), spent, "every settled request is in the ledger once")
	rows, err := r.store.Entries(ctx, store.LedgerFilter{Scope: &key, Limit: affordable + 10})
	require.NoError(t, err)
	require.Len(t, rows, n)
	for _, e := range rows {
		_, ok := settled.Load(e.RequestID)
		require.True(t, ok, e.RequestID)
	}
	require.LessOrEqual(t, spent, lim.Budgets[0].Limit)
}

func total(a *[6]atomic.Int64) int64 {
	var n int64
	for i := range a {
		n += a[i].Load()
	}
	return n
}
