package accounting_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestExpiredStreamChargedFromItsCheckpoint: replica A admits three requests
// and dies without settling them (kill -9). A stream that ran past the
// checkpoint interval is charged, at its lease's end by replica B, what it
// showed by A's last checkpoint write plus the allowance (twice the largest
// output growth between two writes, plus 64 tokens) — less than its worst
// case and more than the provider billed; a non-streamed request and a stream
// shorter than the interval have no checkpoint and keep the worst case. The
// strict budget held every worst case until then, and its window ends with
// nothing reserved and exactly the ledger spent.
func TestExpiredStreamChargedFromItsCheckpoint(t *testing.T) {
	cl := newCheckpointCluster(t, time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC))
	rdb, pfx, st, clk := cl.rdb, cl.pfx, cl.st, cl.clk
	ca, a := cl.replica(t)
	cb, b := cl.replica(t)

	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-cp"}
	total := kernel.Period{Kind: kernel.PeriodTotal}
	lim := &kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 1_000_000_000, Period: total}}}
	price := kernel.Price{Input: 1_000_000, Output: 4_000_000} // n$ per million tokens
	worst := kernel.Cost(price, kernel.Usage{Input: 4000, Output: 1000})
	for _, id := range []string{"stream", "plain", "short", "tiny"} {
		maxTokens := int64(1000)
		if id == "tiny" {
			maxTokens = 8 // the allowance cannot take it past its bound
		}
		d, err := a.Admit(t.Context(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: key, Limits: lim}}, Model: "m", PromptBytes: 4000, MaxTokens: maxTokens, Price: price,
		})
		require.NoError(t, err)
		require.True(t, d.Admitted)
	}

	// The stream's chunks over 2.5 s: 100 output tokens in its first second,
	// 60 in the next; the last write sees 160.
	a.Checkpoint("stream", kernel.Usage{Input: 1000, Output: 10})
	a.Checkpoint("tiny", kernel.Usage{Input: 1000, Output: 2})
	clk.add(time.Second)
	a.Checkpoint("stream", kernel.Usage{Input: 1000, Output: 100})
	require.NoError(t, ca.WriteCheckpoints(t.Context(), clk.now()))
	clk.add(time.Second)
	a.Checkpoint("stream", kernel.Usage{Input: 1000, Output: 160})
	a.Checkpoint("short", kernel.Usage{Input: 1000, Output: 30}) // its first chunk
	require.NoError(t, ca.WriteCheckpoints(t.Context(), clk.now()))
	clk.add(500 * time.Millisecond)
	a.Checkpoint("stream", kernel.Usage{Input: 1000, Output: 190}) // never written: A dies here

	n, err := rdb.Exists(t.Context(), "{"+pfx+"}:u:stream", "{"+pfx+"}:u:short", "{"+pfx+"}:u:plain").Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "only the streams that ran an interval have a checkpoint")
	ttl, err := rdb.PTTL(t.Context(), "{"+pfx+"}:u:stream").Result()
	require.NoError(t, err)
	require.InDelta(t, float64(time.Minute+time.Hour-2500*time.Millisecond), float64(ttl), float64(5*time.Second),
		"kept until an hour after the lease")

	clk.add(time.Minute)
	b.ExpireNow(t.Context())

	got := ledgerByID(t, st, key)
	require.Len(t, got, 4)
	tiny := kernel.Usage{Input: 1000, Output: 8}
	require.Equal(t, tiny, got["tiny"].Usage, "2 tokens seen, the allowance capped at max_tokens")
	require.Equal(t, kernel.Cost(price, tiny), got["tiny"].Cost)
	charged := kernel.Usage{Input: 1000, Output: 160 + 2*100 + 64}
	require.Equal(t, kernel.StatusExpired, got["stream"].Status)
	require.Equal(t, charged, got["stream"].Usage)
	require.Equal(t, kernel.Cost(price, charged), got["stream"].Cost)
	billed := kernel.Cost(price, kernel.Usage{Input: 1000, Output: 190 + 40}) // what A saw, and a little after it died
	require.Greater(t, got["stream"].Cost, billed)
	require.Less(t, got["stream"].Cost, worst)
	t.Logf("stream cut after 2.5 s: charged %d n$ (worst case %d n$, provider ~%d n$)", got["stream"].Cost, worst, billed)
	for _, id := range []string{"plain", "short"} {
		require.Equal(t, worst, got[id].Cost, id)
		require.Equal(t, kernel.StatusExpired, got[id].Status, id)
	}

	spent, reserved, err := cb.Usage(t.Context(), key, total, clk.now())
	require.NoError(t, err)
	require.Zero(t, reserved)
	require.Equal(t, got["stream"].Cost+got["tiny"].Cost+2*worst, spent)
	n, err = rdb.Exists(t.Context(), "{"+pfx+"}:u:stream").Result()
	require.NoError(t, err)
	require.Zero(t, n, "the expiry deletes the checkpoint")
}

// checkpointCluster is replicas over one Redis prefix and one ledger, with
// checkpoints every second and one-minute leases, on a test clock.
type checkpointCluster struct {
	rdb *goredis.Client
	pfx string
	st  *memstore.Store
	clk *clock
}

func newCheckpointCluster(t *testing.T, start time.Time) *checkpointCluster {
	rdb := client(t)
	return &checkpointCluster{rdb: rdb, pfx: prefix(t, rdb), st: memstore.New(), clk: &clock{t: start}}
}

// replica is one more replica of the cluster.
func (cl *checkpointCluster) replica(t *testing.T) (*accounting.RedisCounters, *accounting.Accountant) {
	c := accounting.NewRedisCounters(cl.rdb, zeroSeed, accounting.WithPrefix(cl.pfx), accounting.WithCheckpoints(time.Second))
	t.Cleanup(c.Close)
	return c, accounting.NewAccountant(c, cl.st, cl.clk.now, slog.New(slog.DiscardHandler), accounting.WithLease(time.Minute))
}

// TestSettledStreamLeavesNoCheckpoint: a stream settled by its own replica
// after its checkpoint was written loses it at the next write, and a write
// racing the settlement cannot bring it back (it is written only while the
// reservation's record exists).
func TestSettledStreamLeavesNoCheckpoint(t *testing.T) {
	rdb := client(t)
	pfx := prefix(t, rdb)
	st := memstore.New()
	clk := &clock{t: time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)}
	c := accounting.NewRedisCounters(rdb, zeroSeed, accounting.WithPrefix(pfx))
	t.Cleanup(c.Close)
	a := accounting.NewAccountant(c, st, clk.now, slog.New(slog.DiscardHandler))
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k-cp2"}
	price := kernel.Price{Input: 1_000_000, Output: 1_000_000}
	admit := func(id string) {
		d, err := a.Admit(t.Context(), &kernel.AdmitRequest{
			ID: id, Scopes: []kernel.Scope{{Ref: key}}, Model: "m", PromptBytes: 100, MaxTokens: 100, Price: price,
		})
		require.NoError(t, err)
		require.True(t, d.Admitted)
	}
	exists := func(id string) bool {
		n, err := rdb.Exists(t.Context(), "{"+pfx+"}:u:"+id).Result()
		require.NoError(t, err)
		return n == 1
	}
	admit("s")
	a.Checkpoint("s", kernel.Usage{Input: 25, Output: 5})
	clk.add(2 * time.Second)
	require.NoError(t, c.WriteCheckpoints(t.Context(), clk.now()))
	require.True(t, exists("s"))
	_, err := a.Settle(t.Context(), store.LedgerEntry{
		RequestID: "s", KeyID: key.ID, Usage: kernel.Usage{Input: 25, Output: 40}, Status: kernel.StatusCompleted,
	})
	require.NoError(t, err)
	require.NoError(t, c.WriteCheckpoints(t.Context(), clk.now()))
	require.False(t, exists("s"), "deleted at the next write")

	// A second replica settles what the first still streams (its record is
	// gone): the first's next write must not create a checkpoint for it.
	admit("r")
	a.Checkpoint("r", kernel.Usage{Input: 25, Output: 5})
	clk.add(2 * time.Second)
	other := accounting.NewRedisCounters(rdb, zeroSeed, accounting.WithPrefix(pfx))
	t.Cleanup(other.Close)
	_, ok, err := other.Settle(t.Context(), clk.now(), "r", kernel.Usage{Input: 25, Output: 9}, kernel.StatusCompleted)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, c.WriteCheckpoints(t.Context(), clk.now()))
	require.False(t, exists("r"))
}

// BenchmarkCheckpoint is the accountant's work for one stream chunk with
// checkpoints on (memory only: Redis is written every interval, not here),
// 64 streams open.
func BenchmarkCheckpoint(b *testing.B) {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"}) // never reached
	defer func() { _ = rdb.Close() }()
	c := accounting.NewRedisCounters(rdb, zeroSeed)
	defer c.Close()
	a := accounting.NewAccountant(c, memstore.New(), time.Now, slog.New(slog.DiscardHandler))
	ids := make([]string, 64)
	for i := range ids {
		ids[i] = fmt.Sprintf("tg-0123456789abcdef-%d", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a.Checkpoint(ids[i%len(ids)], kernel.Usage{Input: 1000, Output: int64(i)})
		i++
	}
}
