package formal_test

import (
	"context"
	"log/slog"
	"math/bits"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// The constants of formal/spin/replicas.pml: money in nano-dollars.
const (
	spinReplicas = 3
	spinLimit    = 4
	spinRunLimit = 2
	spinTagLimit = 3
	spinWorst    = 2
	spinLease    = time.Hour
)

var (
	spinTeam = kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t"}                              // model scope 0
	spinKey  = kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}                               // model scope 1
	spinRun  = kernel.ScopeRef{Kind: kernel.ScopeRun, ID: "t/run"}                           // model scope 2
	spinTag  = kernel.ScopeRef{Kind: kernel.ScopeTag, ID: kernel.TagScopeID("feature", "x")} // model scope 3
	spinRefs = []kernel.ScopeRef{spinTeam, spinKey, spinRun, spinTag}
	total    = kernel.Period{Kind: kernel.PeriodTotal}
)

// spinRequest is model request r: every request is on the team, the odd ones
// also on the key, requests 0 and 1 also on the run, requests 1 and 2 also
// on the tag; each reserves exactly spinWorst (2 output tokens at 1
// nano-dollar each, no prompt) against a total budget of spinLimit
// (spinRunLimit for the run, with the run's TTL; spinTagLimit for the tag),
// with no clamp (the model does not clamp).
func spinRequest(r int) *kernel.AdmitRequest {
	lim := &kernel.Limits{
		Budgets:   []kernel.BudgetWindow{{Limit: spinLimit, Period: total}},
		Shortfall: kernel.Reject,
	}
	scopes := []kernel.Scope{{Ref: spinTeam, Limits: lim}}
	if r%2 == 1 {
		scopes = []kernel.Scope{{Ref: spinKey, Limits: lim}, {Ref: spinTeam, Limits: lim}}
	}
	if r < 2 {
		run := kernel.Scope{Ref: spinRun, Limits: &kernel.Limits{
			Budgets: []kernel.BudgetWindow{{Limit: spinRunLimit, Period: total}}, TTL: 1000 * spinLease,
		}}
		scopes = append(scopes[:1:1], append([]kernel.Scope{run}, scopes[1:]...)...)
	}
	if r == 1 || r == 2 { // after the team: the kernel's order
		scopes = append(scopes, kernel.Scope{Ref: spinTag, Limits: &kernel.Limits{
			Budgets: []kernel.BudgetWindow{{Limit: spinTagLimit, Period: total}},
		}})
	}
	return &kernel.AdmitRequest{
		ID: idOf(r), Scopes: scopes, Model: "m", MaxTokens: spinWorst,
		Price: kernel.Price{Output: 1_000_000}, Lease: spinLease,
	}
}

// spinOps are the OP lines of one random simulation of the model.
func spinOps(t *testing.T, spin, dir string, seed int) [][]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), spin, "-DSIMLAZY", "-n"+strconv.Itoa(seed), "replicas.pml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "spin: %s", out)
	var ops [][]string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 1 && f[0] == "OP" {
			ops = append(ops, f[1:])
		}
	}
	require.NotEmpty(t, ops, "spin printed no operations: %s", out)
	require.Equal(t, "final", ops[len(ops)-1][0], "the run did not end in the final state: %s", out)
	return ops
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// spinReplay is a replay target: the kernel (one State: it has no Redis to
// lose, so its replay ends at a wipe) or three replicas' Accountants over
// Redis counters on one prefix and a shared ledger.
type spinReplay interface {
	admit(now time.Time, replica int, req *kernel.AdmitRequest) bool
	settle(now time.Time, replica, r int, cost int64) bool
	// expire ends the leases due at now; the ids expired.
	expire(now time.Time) []kernel.Settlement
	// restart wipes Redis; false ends the replay (the kernel has no Redis).
	restart() bool
	// runExpire: the run's counters expire; false ends the replay (the
	// kernel alone does not seed a run from a ledger).
	runExpire() bool
	seed(scope int, spent int64)
	flush(replica int)
	// replay is the crashed replica's next process replaying its spill:
	// what it settled and its writer had not committed reaches the ledger.
	replay(replica int)
	// rejoin is replica's Sync after the wipe; waiting is what the model's
	// rejoin hash holds after it (a bit per replica).
	rejoin(now time.Time, replica int, waiting int)
	grace(waiting int)
	usage(ref kernel.ScopeRef) (int64, int64)
	ledger(ref kernel.ScopeRef) int64
}

type kernelReplay struct{ s *kernel.State }

func (k *kernelReplay) admit(now time.Time, _ int, req *kernel.AdmitRequest) bool {
	return k.s.Admit(now, req).Admitted
}

func (k *kernelReplay) settle(now time.Time, _, r int, cost int64) bool {
	_, ok := k.s.Settle(now, idOf(r), kernel.Usage{Output: cost}, kernel.StatusCompleted)
	return ok
}

func (k *kernelReplay) expire(now time.Time) []kernel.Settlement { return k.s.Expire(now) }
func (k *kernelReplay) restart() bool                            { return false }
func (k *kernelReplay) runExpire() bool                          { return false }
func (k *kernelReplay) seed(int, int64)                          {}
func (k *kernelReplay) flush(int)                                {}
func (k *kernelReplay) replay(int)                               {}
func (k *kernelReplay) rejoin(time.Time, int, int)               {}
func (k *kernelReplay) grace(int)                                {}
func (k *kernelReplay) ledger(kernel.ScopeRef) int64             { return -1 }

func (k *kernelReplay) usage(ref kernel.ScopeRef) (int64, int64) {
	sp, rs := k.s.Usage(ref, total, traceBase)
	return int64(sp), int64(rs)
}

// queuedLedger is one replica's ledger writer over the shared ledger: what
// it appends reaches the ledger only at Flush, as with the group commit.
type queuedLedger struct {
	*memstore.Store
	queue []store.LedgerEntry
}

func (q *queuedLedger) Append(_ context.Context, entries ...store.LedgerEntry) error {
	q.queue = append(q.queue, entries...)
	return nil
}

func (q *queuedLedger) Flush(ctx context.Context) error {
	err := q.Store.Append(ctx, q.queue...)
	q.queue = nil
	return err
}

// redisReplay drives the Go replicas the model describes: each an
// Accountant (which tells its counters what the ledger committed) over
// RedisCounters, with its own ledger writer; the model's lease loop is a
// fourth RedisCounters whose expiries commit at once.
type redisReplay struct {
	t      *testing.T
	rdb    *goredis.Client
	prefix string
	shared *memstore.Store
	accts  [spinReplicas]*accounting.Accountant
	ctrs   [spinReplicas + 1]*accounting.RedisCounters
	seeds  [4]int64 // what the model read from its ledger at its last seed
}

func newRedisReplay(t *testing.T, rdb *goredis.Client, clock *time.Time) *redisReplay {
	t.Helper()
	r := &redisReplay{t: t, rdb: rdb, prefix: newPrefix(t, rdb), shared: memstore.New()}
	now := func() time.Time { return *clock }
	for i := range r.ctrs {
		// The grace never ends by itself here: the model says when (grace).
		c := accounting.NewRedisCounters(rdb, r.seedFunc, accounting.WithPrefix(r.prefix), accounting.WithRejoinGrace(time.Hour))
		t.Cleanup(c.Close)
		r.ctrs[i] = c
		if i < spinReplicas {
			r.accts[i] = accounting.NewAccountant(c, &queuedLedger{Store: r.shared}, now, slog.New(slog.DiscardHandler), accounting.WithLease(spinLease))
		}
	}
	// Register the replicas (epoch, members), then let each copy the others:
	// the replicas to wait for after a wipe.
	for range 2 {
		for _, c := range r.ctrs[:spinReplicas] {
			require.NoError(t, c.Sync(t.Context(), *clock))
		}
	}
	return r
}

func (r *redisReplay) ctx() context.Context {
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	r.t.Cleanup(cancel)
	return ctx
}

func (r *redisReplay) admit(_ time.Time, replica int, req *kernel.AdmitRequest) bool {
	d, err := r.accts[replica].Admit(r.ctx(), req)
	require.NoError(r.t, err)
	return d.Admitted
}

func (r *redisReplay) settle(_ time.Time, replica, req int, cost int64) bool {
	e := store.LedgerEntry{
		RequestID: idOf(req), TeamID: spinTeam.ID, Model: "m",
		Usage: kernel.Usage{Output: cost}, Status: kernel.StatusCompleted, HTTPStatus: 200,
	}
	if req%2 == 1 {
		e.KeyID = spinKey.ID
	}
	if req < 2 {
		e.RunID = spinRun.ID
	}
	if req == 1 || req == 2 {
		e.Tags = []string{spinTag.ID}
	}
	got, err := r.accts[replica].Settle(r.ctx(), e)
	require.NoError(r.t, err)
	if got != 0 {
		require.Equal(r.t, kernel.Money(cost), got, "the cost charged for %s", e.RequestID)
	}
	return got != 0
}

// expire is the lease loop of the fourth replica; its writer commits at once.
func (r *redisReplay) expire(now time.Time) []kernel.Settlement {
	out, err := r.ctrs[spinReplicas].Expire(r.ctx(), now)
	require.NoError(r.t, err)
	for _, s := range out {
		e := store.LedgerEntry{RequestID: s.ID, Model: s.Model, Cost: s.Cost, Status: kernel.StatusExpired, EndedAt: s.SettledAt}
		for _, ref := range s.Scopes {
			switch ref {
			case spinKey:
				e.KeyID = ref.ID
			case spinRun:
				e.RunID = ref.ID
			case spinTag:
				e.Tags = append(e.Tags, ref.ID)
			default:
				e.TeamID = ref.ID
			}
		}
		require.NoError(r.t, r.shared.Append(r.ctx(), e))
	}
	return out
}

func (r *redisReplay) restart() bool {
	flushPrefix(r.t, r.rdb, r.prefix)
	return true
}

func (r *redisReplay) seed(scope int, spent int64) { r.seeds[scope] = spent }

// runExpire: the run's scope hash expires (Redis's TTL, here at once).
func (r *redisReplay) runExpire() bool {
	key := "{" + r.prefix + "}:s:" + strconv.Itoa(int(kernel.ScopeRun)) + ":" + spinRun.ID
	require.NoError(r.t, r.rdb.Del(r.ctx(), key).Err())
	return true
}

func (r *redisReplay) flush(replica int) { require.NoError(r.t, r.accts[replica].Flush(r.ctx())) }

// replay: the dead replica's queue is what its spill holds that the ledger
// lacks (every settlement is written to the spill before it is queued).
func (r *redisReplay) replay(replica int) { r.flush(replica) }

func (r *redisReplay) rejoin(now time.Time, replica, waiting int) {
	require.NoError(r.t, r.ctrs[replica].Sync(r.ctx(), now))
	r.requireWaiting(waiting)
}

// grace: the rejoin hash expires (the model says when: only the dead are left).
func (r *redisReplay) grace(waiting int) {
	r.requireWaiting(waiting)
	require.NoError(r.t, r.rdb.Del(r.ctx(), "{"+r.prefix+"}:rejoin").Err())
}

// requireWaiting: Redis's rejoin hash lists as many replicas as the model's.
func (r *redisReplay) requireWaiting(waiting int) {
	n, err := r.rdb.HLen(r.ctx(), "{"+r.prefix+"}:rejoin").Result()
	require.NoError(r.t, err)
	require.Equal(r.t, int64(bits.OnesCount(uint(waiting))), n, "replicas still to rejoin (model: %03b)", waiting)
}

func (r *redisReplay) usage(ref kernel.ScopeRef) (int64, int64) {
	sp, rs, err := r.ctrs[0].Usage(r.ctx(), ref, total, traceBase)
	require.NoError(r.t, err)
	return int64(sp), int64(rs)
}

func (r *redisReplay) ledger(ref kernel.ScopeRef) int64 {
	v, err := r.shared.ScopeSpend(r.ctx(), ref, time.Time{}, time.Time{})
	require.NoError(r.t, err)
	return int64(v)
}

// seedFunc answers the Redis counters' seeding with what the model read from
// its ledger at its seed step (zero before the wipe).
func (r *redisReplay) seedFunc(_ context.Context, ref kernel.ScopeRef, _, _ time.Time) (kernel.Money, error) {
	switch ref {
	case spinKey:
		return kernel.Money(r.seeds[1]), nil
	case spinRun:
		return kernel.Money(r.seeds[2]), nil
	case spinTag:
		return kernel.Money(r.seeds[3]), nil
	}
	return kernel.Money(r.seeds[0]), nil
}

// replaySpin replays one simulation and fails on the first disagreement. An
// admission moves the clock a second, any other step a millisecond, and an
// expiry to its lease's end: a later admission's lease has not ended while
// the model says it runs.
func replaySpin(t *testing.T, name string, ops [][]string, target spinReplay, clock *time.Time) {
	t.Helper()
	admittedAt := map[int]time.Time{}
	tick := func(d time.Duration) time.Time {
		*clock = clock.Add(d)
		return *clock
	}
	waiting := 0
	for i, op := range ops {
		where := name + " op " + strconv.Itoa(i) + " " + strings.Join(op, " ")
		switch op[0] {
		case "admit":
			r, ok := atoi(t, op[1]), op[2] == "1"
			now := tick(time.Second)
			require.Equal(t, ok, target.admit(now, r%spinReplicas, spinRequest(r)), where)
			if ok {
				admittedAt[r] = now
			}
		case "settle":
			r, c, ok := atoi(t, op[1]), atoi(t, op[2]), op[3] == "1"
			require.Equal(t, ok, target.settle(tick(time.Millisecond), r%spinReplicas, r, int64(c)), where)
		case "expire":
			// Equal leases: the oldest open one ends first, at its admission +
			// the lease.
			r := atoi(t, op[1])
			at := admittedAt[r].Add(spinLease)
			if at.After(*clock) {
				*clock = at
			}
			got := target.expire(at)
			require.Len(t, got, 1, where)
			require.Equal(t, idOf(r), got[0].ID, where)
			require.Equal(t, kernel.Money(spinWorst), got[0].Cost, where)
		case "restart":
			if !target.restart() {
				return
			}
		case "runexpire":
			if !target.runExpire() {
				return
			}
		case "seed":
			target.seed(atoi(t, op[1]), int64(atoi(t, op[2])))
		case "flush":
			target.flush(atoi(t, op[1]))
		case "rejoin":
			waiting = atoi(t, op[2])
			target.rejoin(tick(time.Millisecond), atoi(t, op[1]), waiting)
		case "grace":
			target.grace(waiting)
			waiting = 0
		case "crash":
			// The replica stops: its queue is never flushed, it never syncs.
		case "replay":
			target.replay(atoi(t, op[1]))
		case "final":
			for s, ref := range spinRefs {
				sp, rs := target.usage(ref)
				require.Equal(t, [2]int64{int64(atoi(t, op[1+2*s])), int64(atoi(t, op[2+2*s]))}, [2]int64{sp, rs},
					"%s: spent and reserved of model scope %d", where, s)
				if l := target.ledger(ref); l >= 0 {
					require.Equal(t, int64(atoi(t, op[1+2*len(spinRefs)+s])), l, "%s: the ledger of model scope %d", where, s)
				}
			}
		default:
			t.Fatalf("%s: unknown operation", where)
		}
	}
}

// TestSpinSimulationsMatchKernelAndRedis replays random simulations of the
// replica model (formal/spin/replicas.pml) — admissions, settlements (some
// after their lease ended, some after a Redis wipe), expiries, crashes, the
// wipe, each replica's rejoin, the grace and the re-seeding — against three
// replicas' Accountants over Redis counters and a shared ledger, requiring
// the same decisions, the same rejoin hash after each rejoin, and the same
// final spent and reserved in Redis and spend in the ledger; and, up to the
// wipe, against kernel.State.
func TestSpinSimulationsMatchKernelAndRedis(t *testing.T) {
	spin := tool(t, "spin", "spin")
	dir := t.TempDir()
	b, err := exec.CommandContext(t.Context(), "cp", "spin/replicas.pml", dir).CombinedOutput()
	require.NoError(t, err, "%s", b)

	runs := make([][][]string, 0, 40)
	kinds := map[string]int{}
	for seed := 1; seed <= 40; seed++ {
		ops := spinOps(t, spin, dir, seed)
		wiped, before := false, map[string]bool{}
		for _, op := range ops {
			k := op[0]
			switch {
			case k == "restart":
				wiped = true
			case k == "admit" && op[2] == "1" && !wiped:
				before[op[1]] = true
			case k == "admit" && op[2] == "1":
				k = "admit after the wipe"
			case k == "settle" && op[3] == "0":
				k = "late settle"
			case k == "settle" && wiped && before[op[1]]:
				k = "settle across the wipe"
			case k == "seed" && op[1] == "3" && op[2] != "0":
				k = "tag seeded from the ledger"
			}
			kinds[k]++
		}
		runs = append(runs, ops)
	}
	// The simulations must reach every kind of step, or they prove little.
	for _, k := range []string{
		"admit", "settle", "late settle", "expire", "restart", "runexpire", "seed", "flush", "rejoin", "grace", "crash", "replay", "final",
		"admit after the wipe", "settle across the wipe", "tag seeded from the ledger",
	} {
		require.Positive(t, kinds[k], "no %q in 40 simulations: %v", k, kinds)
	}
	t.Logf("steps of the 40 simulations: %v", kinds)

	for i, ops := range runs {
		clock := traceBase
		replaySpin(t, "kernel run "+strconv.Itoa(i+1), ops, &kernelReplay{s: kernel.NewState()}, &clock)
	}

	rdb := redisClient(t)
	for i, ops := range runs {
		clock := traceBase
		replaySpin(t, "redis run "+strconv.Itoa(i+1), ops, newRedisReplay(t, rdb, &clock), &clock)
	}
}
