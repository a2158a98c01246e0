package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/postgres"
)

var hour0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func entry(id, key, team string, cost kernel.Money, ended time.Time) store.LedgerEntry {
	return store.LedgerEntry{
		RequestID: id, KeyID: key, TeamID: team, Model: "gpt", Deployment: "d1",
		Usage: kernel.Usage{Input: 10, Output: 5}, Cost: cost, Status: kernel.StatusCompleted,
		HTTPStatus: 200, StartedAt: ended.Add(-time.Second), EndedAt: ended,
	}
}

func TestLedgerIdempotentTotals(t *testing.T) {
	ctx := t.Context()
	s := open(t, testenv.FreshPostgres(t), postgres.WithWriters(1))
	e1 := entry("r1", "k1", "t1", 100, hour0.Add(5*time.Minute+123))
	e2 := entry("r2", "k1", "", 250, hour0.Add(70*time.Minute))
	require.NoError(t, s.Append(ctx, e1, e2, e1)) // repeated within a batch
	require.NoError(t, s.Flush(ctx))
	require.NoError(t, s.Append(ctx, e2)) // repeated across batches (a retry)
	require.NoError(t, s.Flush(ctx))

	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}
	got, err := s.ScopeSpend(ctx, key, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(350), got)
	got, err = s.ScopeSpend(ctx, key, hour0, hour0.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, kernel.Money(100), got)
	got, err = s.ScopeSpend(ctx, kernel.ScopeRef{Kind: kernel.ScopeGlobal}, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(350), got)
	got, err = s.ScopeSpend(ctx, kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t1"}, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(100), got)

	series, err := s.Series(ctx, key, hour0, hour0.Add(3*time.Hour), time.Hour)
	require.NoError(t, err)
	require.Len(t, series, 3)
	require.Equal(t, []kernel.Money{100, 250, 0}, []kernel.Money{series[0].Cost, series[1].Cost, series[2].Cost})
	require.Equal(t, int64(1), series[1].Requests)
	require.Equal(t, int64(15), series[1].Tokens)

	rows, err := s.Entries(ctx, store.LedgerFilter{Scope: &key})
	require.NoError(t, err)
	require.Equal(t, []store.LedgerEntry{e1, e2}, rows, "entries round-trip exactly")
	page, err := s.Entries(ctx, store.LedgerFilter{After: "r1", Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []store.LedgerEntry{e2}, page)

	st := s.Stats()
	require.Equal(t, uint64(2), st.Batches)
}

// TestLedgerConcurrentReplicas: two stores (replicas) append overlapping
// request ids from many goroutines, all charged to the same scopes (so their
// transactions contend on the same total rows): no deadlock, every request
// recorded exactly once, totals equal the sum of the distinct entries.
func TestLedgerConcurrentReplicas(t *testing.T) {
	u := testenv.FreshPostgres(t)
	a := open(t, u, postgres.WithWindow(0), postgres.WithBatchSize(64))
	b := open(t, u, postgres.WithWindow(0), postgres.WithBatchSize(64))
	ctx := t.Context()
	const n, workers = 3000, 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			st := []*postgres.Store{a, b}[w%2]
			for i := w; i < n; i += workers / 2 { // every id appended by two workers, one per replica
				team := fmt.Sprintf("t%d", i%7)
				e := entry(fmt.Sprintf("req-%05d", i), fmt.Sprintf("k%d", i%13), team, kernel.Money(i+1),
					hour0.Add(time.Duration(i)*time.Second))
				if err := st.Append(ctx, e); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, a.Flush(ctx))
	require.NoError(t, b.Flush(ctx))

	var want kernel.Money
	for i := range n {
		want += kernel.Money(i + 1)
	}
	got, err := a.ScopeSpend(ctx, kernel.ScopeRef{Kind: kernel.ScopeGlobal}, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, want, got)
	var rows int64
	require.NoError(t, a.Pool().QueryRow(ctx, `SELECT count(*) FROM ledger`).Scan(&rows))
	require.Equal(t, int64(n), rows)
	var reqs int64
	require.NoError(t, a.Pool().QueryRow(ctx,
		`SELECT sum(requests) FROM spend_hourly WHERE scope_kind = $1`, int16(kernel.ScopeTeam)).Scan(&reqs))
	require.Equal(t, int64(n), reqs)
}

func TestCloseDrainsAndRefuses(t *testing.T) {
	u := testenv.FreshPostgres(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, u, postgres.WithWindow(50*time.Millisecond))
	require.NoError(t, err)
	for i := range 500 {
		require.NoError(t, s.Append(ctx, entry(fmt.Sprintf("c%d", i), "k", "", 1, hour0)))
	}
	require.NoError(t, s.Close(ctx))
	require.ErrorIs(t, s.Append(ctx, entry("late", "k", "", 1, hour0)), store.ErrClosed)

	s2 := open(t, u)
	got, err := s2.ScopeSpend(ctx, kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Equal(t, kernel.Money(500), got, "Close wrote everything queued")
}

func TestAudit(t *testing.T) {
	ctx := t.Context()
	s := open(t, testenv.FreshPostgres(t))
	for i := range 3 {
		require.NoError(t, s.AppendAudit(ctx, store.AuditEntry{
			Actor: "root", Action: "key.create",
			Kind: store.KindKey, Target: fmt.Sprintf("k%d", i),
		}))
	}
	all, err := s.ListAudit(ctx, 0, 0)
	require.NoError(t, err)
	require.Len(t, all, 3)
	rest, err := s.ListAudit(ctx, all[0].ID, 1)
	require.NoError(t, err)
	require.Len(t, rest, 1)
	require.Equal(t, "k1", rest[0].Target)
}

// TestBackpressure: with PostgreSQL unreachable the queue fills and Append
// waits until its context ends (ErrQueueFull); nothing is dropped.
func TestBackpressure(t *testing.T) {
	pg := testenv.StartPostgres(t)
	ctx := t.Context()
	s := open(t, pg.URL, postgres.WithQueueSize(100), postgres.WithBatchSize(10),
		postgres.WithRetryBackoff(20*time.Millisecond))
	pg.Stop(t)
	var err error
	for i := range 200 {
		actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		err = s.Append(actx, entry(fmt.Sprintf("b%d", i), "k", "", 1, hour0))
		cancel()
		if err != nil {
			break
		}
	}
	require.ErrorIs(t, err, store.ErrQueueFull)
	pg.Start(t)
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, s.Flush(fctx))
	var rows int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM ledger`).Scan(&rows))
	require.GreaterOrEqual(t, rows, int64(100), "everything accepted was written after recovery")
	require.Positive(t, s.Stats().FlushErrors)
}
