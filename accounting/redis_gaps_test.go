package accounting_test

import (
	"context"
	"log/slog"
	"strconv"
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
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// The gaps the spin model found in the rejoin protocol (docs/accounting.md,
// section 2), each closed and pinned here against a real Redis.

// gapClock is a settable clock shared by the replicas of a test.
type gapClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *gapClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *gapClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// gapRig is replicas over one private Redis and one shared in-memory ledger.
type gapRig struct {
	redis    *testenv.PrivateRedis
	clock    *gapClock
	ledger   *memstore.Store
	counters []*accounting.RedisCounters
	accts    []*accounting.Accountant
}

var (
	gapKey   = kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-gap"}
	gapPrice = kernel.Price{Input: 1_000_000, Output: 2_000_000}
	gapTotal = kernel.Period{Kind: kernel.PeriodTotal}
	gapUsage = kernel.Usage{Input: 100, Output: 50}
	gapCost  = kernel.Cost(gapPrice, gapUsage)
	gapWorst = kernel.Cost(gapPrice, kernel.Usage{Input: 400, Output: 100})
)

func newGapRig(t *testing.T, n int, seed func(st *memstore.Store) accounting.SeedFunc, opts ...accounting.RedisOption) *gapRig {
	t.Helper()
	g := &gapRig{redis: testenv.StartRedis(t), clock: &gapClock{t: time.Now()}, ledger: memstore.New()}
	for range n {
		rdb := goredis.NewClient(mustParse(t, g.redis.URL))
		t.Cleanup(func() { _ = rdb.Close() })
		c := accounting.NewRedisCounters(rdb, seed(g.ledger), opts...)
		t.Cleanup(c.Close)
		g.counters = append(g.counters, c)
		g.accts = append(g.accts, accounting.NewAccountant(c, g.ledger, g.clock.now, slog.New(slog.DiscardHandler)))
	}
	return g
}

func ledgerSeed(st *memstore.Store) accounting.SeedFunc { return accounting.LedgerSeed(st) }

// admit admits id on replica r with a one-minute lease against a budget of limit.
func (g *gapRig) admit(t *testing.T, r int, id string, limit kernel.Money) bool {
	t.Helper()
	ok, err := g.tryAdmit(t, r, id, limit)
	require.NoError(t, err, id)
	return ok
}

// tryAdmit is admit for another goroutine than the test's.
func (g *gapRig) tryAdmit(t *testing.T, r int, id string, limit kernel.Money) (bool, error) {
	d, err := g.accts[r].Admit(t.Context(), &kernel.AdmitRequest{
		ID: id, Model: "m", PromptBytes: 400, MaxTokens: 100, Price: gapPrice, Lease: time.Minute,
		Scopes: []kernel.Scope{{Ref: gapKey, Limits: &kernel.Limits{
			Mode: kernel.Strict, Shortfall: kernel.Reject,
			Budgets: []kernel.BudgetWindow{{Limit: limit, Period: gapTotal}},
		}}},
	})
	return d.Admitted, err
}

// syncEvery runs the Sync of replicas every few milliseconds (what their
// ExpireLoop does every second) until stop is called.
func (g *gapRig) syncEvery(t *testing.T, replicas ...int) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
				for _, r := range replicas {
					_ = g.counters[r].Sync(t.Context(), g.clock.now())
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func (g *gapRig) settle(t *testing.T, r int, id string) kernel.Money {
	t.Helper()
	cost, err := g.accts[r].Settle(t.Context(), store.LedgerEntry{
		RequestID: id, KeyID: gapKey.ID, Model: "m", Usage: gapUsage, Status: kernel.StatusCompleted, HTTPStatus: 200,
	})
	require.NoError(t, err, id)
	return cost
}

func (g *gapRig) sync(t *testing.T, r int) {
	t.Helper()
	require.NoError(t, g.counters[r].Sync(t.Context(), g.clock.now()))
}

func (g *gapRig) wipe(t *testing.T) {
	t.Helper()
	admin := goredis.NewClient(mustParse(t, g.redis.URL))
	defer func() { _ = admin.Close() }()
	require.NoError(t, admin.FlushAll(t.Context()).Err())
}

// entries is the ledger's entries of id.
func (g *gapRig) entries(t *testing.T, id string) []store.LedgerEntry {
	t.Helper()
	for _, a := range g.accts {
		require.NoError(t, a.Flush(t.Context()))
	}
	all, err := g.ledger.Entries(t.Context(), store.LedgerFilter{})
	require.NoError(t, err)
	var out []store.LedgerEntry
	for _, e := range all {
		if e.RequestID == id {
			out = append(out, e)
		}
	}
	return out
}

// TestLateSettleAfterWipe (spin's -DLATESETTLE): a request outlives its
// one-minute lease; Redis is wiped before any lease loop expired it, and its
// settlement comes two minutes after admission, before the replica's next
// Sync. It must be charged and reach the ledger exactly once — also when the
// replica's own lease loop ran in between (it must not forget the record
// Redis lost) — and a second settlement changes nothing.
func TestLateSettleAfterWipe(t *testing.T) {
	for _, loop := range []bool{false, true} {
		t.Run(map[bool]string{false: "settle", true: "lease loop then settle"}[loop], func(t *testing.T) {
			g := newGapRig(t, 1, ledgerSeed)
			g.sync(t, 0)
			t0 := g.clock.now()
			require.True(t, g.admit(t, 0, "late", 100*gapWorst))
			g.wipe(t)
			g.clock.set(t0.Add(2 * time.Minute))
			if loop {
				g.accts[0].ExpireNow(t.Context())
			}
			require.Equal(t, gapCost, g.settle(t, 0, "late"), "the late settlement is charged")
			require.Zero(t, g.settle(t, 0, "late"), "exactly once")
			e := g.entries(t, "late")
			require.Len(t, e, 1, "the late settlement reaches the ledger once")
			require.Equal(t, gapCost, e[0].Cost)
			require.Equal(t, kernel.StatusCompleted, e[0].Status)
			_, reserved, err := g.counters[0].Usage(t.Context(), gapKey, gapTotal, g.clock.now())
			require.NoError(t, err)
			require.Zero(t, reserved, "the re-registered reservation is released")
		})
	}
}

// TestLateSettleAfterExpiry: the same late settlement when another replica's
// lease loop expired the re-registered reservation first: the ledger keeps
// the expiry's entry (the worst cost), and the settlement charges nothing.
func TestLateSettleAfterExpiry(t *testing.T) {
	g := newGapRig(t, 2, ledgerSeed)
	for range 2 {
		g.sync(t, 0)
		g.sync(t, 1)
	}
	t0 := g.clock.now()
	require.True(t, g.admit(t, 0, "late", 100*gapWorst))
	g.wipe(t)
	g.clock.set(t0.Add(30 * time.Second))
	g.sync(t, 0) // re-registers the reservation, with its lease
	g.clock.set(t0.Add(2 * time.Minute))
	g.accts[1].ExpireNow(t.Context())
	require.Zero(t, g.settle(t, 0, "late"), "expired first: the settlement is late")
	e := g.entries(t, "late")
	require.Len(t, e, 1)
	require.Equal(t, kernel.StatusExpired, e[0].Status)
	require.Equal(t, gapWorst, e[0].Cost)
}

// TestSeedRefusesAStaleLedgerRead: a budget window's ledger read made before
// a wipe must not seed it after the wipe. Replica 0 holds a reservation
// re-registered after a first wipe (its window not seeded yet); replica 1
// needs the window seeded, reads the ledger, and Redis is wiped again before
// the seed lands. Seeding then would let replica 1 admit against a window
// that misses replica 0's reservation (which it re-registers only at its
// next Sync): with a budget of two worst costs, two more admissions. The
// seed must be refused (the epoch changed), replica 1 rejoin and wait for
// replica 0, and admit one.
func TestSeedRefusesAStaleLedgerRead(t *testing.T) {
	var wipeOnRead atomic.Bool
	var g *gapRig
	g = newGapRig(t, 2, func(st *memstore.Store) accounting.SeedFunc {
		read := accounting.LedgerSeed(st)
		return func(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
			spent, err := read(ctx, scope, since, until)
			if wipeOnRead.CompareAndSwap(true, false) {
				g.wipe(t) // after the read, before the seed
			}
			return spent, err
		}
	})
	for range 2 {
		g.sync(t, 0)
		g.sync(t, 1)
	}
	limit := 2 * gapWorst
	require.True(t, g.admit(t, 0, "held", limit))
	g.wipe(t)
	g.sync(t, 0) // re-registers "held": reserved, not seeded
	g.sync(t, 1)

	wipeOnRead.Store(true)
	stop := g.syncEvery(t, 0) // replica 0 rejoins after the second wipe
	first := g.admit(t, 1, "a", limit)
	second := g.admit(t, 1, "b", limit)
	stop()
	require.False(t, wipeOnRead.Load(), "the wipe came between the ledger read and the seed")
	require.True(t, first, "one worst cost is left beside the held reservation")
	require.False(t, second, "the window holds the reservation replica 0 re-registered")
	_, reserved, err := g.counters[1].Usage(t.Context(), gapKey, gapTotal, g.clock.now())
	require.NoError(t, err)
	require.Equal(t, limit, reserved)
}

// TestLateJoinerIsWaitedFor (spin's -DLATEJOIN): replica 2 starts beside
// replicas 0 and 1, joins (Join, before it serves) and admits; Redis is
// wiped before anyone synced again. Whichever replica finds the wipe first,
// the rejoin hash must list the other two — replica 2 is in the others' copy
// of the members, and they are in its own — and an admission that needs a
// seed waits for replica 2's reservation: with a budget of two worst costs,
// one more admission.
func TestLateJoinerIsWaitedFor(t *testing.T) {
	for _, first := range []int{0, 2} {
		t.Run("replica "+strconv.Itoa(first)+" rejoins first", func(t *testing.T) {
			g := newGapRig(t, 3, ledgerSeed)
			for range 2 {
				g.sync(t, 0)
				g.sync(t, 1)
			}
			stop := g.syncEvery(t, 0, 1) // while 2 joins
			require.NoError(t, g.accts[2].Join(t.Context()))
			stop()

			limit := 2 * gapWorst
			require.True(t, g.admit(t, 2, "joiner", limit))
			g.wipe(t)
			g.sync(t, first)
			admin := goredis.NewClient(mustParse(t, g.redis.URL))
			defer func() { _ = admin.Close() }()
			keys, err := admin.Keys(t.Context(), "*rejoin").Result()
			require.NoError(t, err)
			require.Len(t, keys, 1)
			n, err := admin.HLen(t.Context(), keys[0]).Result()
			require.NoError(t, err)
			require.Equal(t, int64(2), n, "the rejoin hash lists the two other replicas")

			// Replica 0 admits (a seed: it waits) while the others rejoin.
			var admitted []bool
			var wg sync.WaitGroup
			wg.Go(func() {
				for _, id := range []string{"a", "b"} {
					ok, err := g.tryAdmit(t, 0, id, limit)
					if err != nil {
						t.Error(err)
						return
					}
					admitted = append(admitted, ok)
				}
			})
			for r := range 3 {
				if r != first {
					g.sync(t, r)
				}
			}
			wg.Wait()
			require.Equal(t, []bool{true, false}, admitted, "the window holds the joiner's reservation")
		})
	}
}
