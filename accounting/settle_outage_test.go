package accounting_test

import (
	"fmt"
	"log/slog"
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

// outageRig is one replica's accountant over a private Redis and an
// in-memory ledger.
type outageRig struct {
	redis    *testenv.PrivateRedis
	rdb      *goredis.Client
	counters *accounting.RedisCounters
	acct     *accounting.Accountant
	ledger   *memstore.Store
}

func newOutageRig(t *testing.T, policy accounting.FailurePolicy) *outageRig {
	t.Helper()
	rs := testenv.StartRedis(t)
	opt, err := goredis.ParseURL(rs.URL)
	require.NoError(t, err)
	opt.MaxRetries = -1
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = 200*time.Millisecond, time.Second, time.Second
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	st := memstore.New()
	c := accounting.NewRedisCounters(rdb, accounting.LedgerSeed(st),
		accounting.WithFailurePolicy(policy), accounting.WithTimeout(time.Second))
	t.Cleanup(c.Close)
	return &outageRig{
		redis: rs, rdb: rdb, counters: c, ledger: st,
		acct: accounting.NewAccountant(c, st, time.Now, slog.New(slog.DiscardHandler)),
	}
}

var (
	outageKey   = kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-outage"}
	outagePrice = kernel.Price{Input: 1_000_000, Output: 2_000_000} // $1 / $2 per million tokens
	outageTotal = kernel.Period{Kind: kernel.PeriodTotal}
	outageLim   = &kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 1_000_000_000, Period: outageTotal}}}
)

func (r *outageRig) admit(t *testing.T, id string) {
	t.Helper()
	d, err := r.acct.Admit(t.Context(), &kernel.AdmitRequest{
		ID: id, Scopes: []kernel.Scope{{Ref: outageKey, Limits: outageLim}}, Model: "m",
		PromptBytes: 400, MaxTokens: 100, Price: outagePrice,
	})
	require.NoError(t, err)
	require.True(t, d.Admitted, "%s: %v", id, d.Reason)
}

func (r *outageRig) settle(t *testing.T, id string, u kernel.Usage) kernel.Money {
	t.Helper()
	cost, err := r.acct.Settle(t.Context(), store.LedgerEntry{
		RequestID: id, KeyID: outageKey.ID, Model: "m", Usage: u, Status: kernel.StatusCompleted, HTTPStatus: 200,
	})
	require.NoError(t, err, "settle %s", id)
	require.Equal(t, kernel.Cost(outagePrice, u), cost, "settle %s", id)
	return cost
}

// ledgerCost is what the ledger holds for id (0 and false when no row).
func (r *outageRig) ledgerCost(t *testing.T, id string) (kernel.Money, bool) {
	t.Helper()
	rows, err := r.ledger.Entries(t.Context(), store.LedgerFilter{Scope: &outageKey, Limit: 1000})
	require.NoError(t, err)
	for _, e := range rows {
		if e.RequestID == id {
			return e.Cost, true
		}
	}
	return 0, false
}

// TestSettleSurvivesRedisLoss: requests admitted through Redis settle while
// Redis is down and after it came back empty. Each settlement is in the ledger
// with its exact cost (Redis is the counter, the ledger the truth), and the
// counters, re-seeded from the ledger, hold the same spend (plus the one
// settled into the rebuilt window before it was seeded).
func TestSettleSurvivesRedisLoss(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy accounting.FailurePolicy
	}{{"closed", accounting.FailClosed}, {"local", accounting.LocalFallback}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newOutageRig(t, tc.policy)
			u := kernel.Usage{Input: 100, Output: 50}
			for i := range 4 {
				r.admit(t, fmt.Sprint("r", i))
			}
			want := r.settle(t, "r0", u)
			require.NoError(t, r.acct.Flush(t.Context())) // the checkpoint ExpireLoop makes every second

			r.redis.Stop() // Redis dies with r1..r3 in flight
			want += r.settle(t, "r1", u)
			want += r.settle(t, "r2", u)
			if tc.policy == accounting.LocalFallback { // admitted and settled in this process meanwhile
				r.admit(t, "local")
				want += r.settle(t, "local", u)
			}

			require.NoError(t, r.acct.Flush(t.Context())) // r1, r2 (and "local") are durable: not re-applied
			// Empty: the reservation of r3 is gone too, until the replica re-registers it.
			r.redis.Start(t)
			r3 := r.settle(t, "r3", u)
			want += r3

			for _, id := range []string{"r0", "r1", "r2", "r3"} {
				cost, ok := r.ledgerCost(t, id)
				require.True(t, ok, "%s is in the ledger", id)
				require.Equal(t, kernel.Cost(outagePrice, u), cost, id)
			}
			_, err := r.counters.Expire(t.Context(), time.Now()) // corrections owed to the lost Redis are dropped
			require.NoError(t, err)
			require.Zero(t, r.counters.PendingCorrections())

			r.admit(t, "after") // seeds the window from the ledger
			spent, reserved, err := r.counters.Usage(t.Context(), outageKey, outageTotal, time.Now())
			require.NoError(t, err)
			t.Logf("ledger and counters after the outage: spent %d n$, reserved %d n$", spent, reserved)
			// r3 was charged to the rebuilt (not yet seeded) window, and the
			// seeding read the ledger, which holds it too: counted twice until
			// the window is next seeded (conservative; docs/accounting.md).
			require.Equal(t, want+r3, spent, "the counters hold what the ledger holds, and r3 twice")
			require.Positive(t, reserved)
		})
	}
}

// TestSettleWhileRedisStalls: Redis keeps its data but does not answer while a
// request settles. The settlement is in the ledger at once; the counters are
// corrected (the reservation released, the cost charged) once Redis answers.
func TestSettleWhileRedisStalls(t *testing.T) {
	r := newOutageRig(t, accounting.FailClosed)
	u := kernel.Usage{Input: 10, Output: 10}
	r.admit(t, "s0")
	ctx := t.Context()
	_, reserved, err := r.counters.Usage(ctx, outageKey, outageTotal, time.Now())
	require.NoError(t, err)
	require.Positive(t, reserved)

	// CLIENT PAUSE holds every other client's commands for 3 s (the settle's
	// round trip times out after 1 s); this connection's own reply comes first.
	require.NoError(t, r.rdb.Do(ctx, "CLIENT", "PAUSE", "3000", "ALL").Err())
	want := r.settle(t, "s0", u)
	cost, ok := r.ledgerCost(t, "s0")
	require.True(t, ok)
	require.Equal(t, want, cost)
	require.Equal(t, 1, r.counters.PendingCorrections())

	// Once Redis answers, the next expiry pass applies the correction.
	require.Eventually(t, func() bool {
		_, err := r.counters.Expire(ctx, time.Now())
		return err == nil && r.counters.PendingCorrections() == 0
	}, 20*time.Second, 100*time.Millisecond)
	spent, reserved, err := r.counters.Usage(ctx, outageKey, outageTotal, time.Now())
	require.NoError(t, err)
	require.Equal(t, want, spent)
	require.Zero(t, reserved)
}
