package formal_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/accounting"
)

// The constants of formal/spin/replicas.pml: money in nano-dollars.
const (
	spinReplicas = 3
	spinLimit    = 4
	spinWorst    = 2
	spinLease    = time.Hour
)

var (
	spinTeam = kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t"} // model scope 0
	spinKey  = kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}  // model scope 1
	spinRefs = []kernel.ScopeRef{spinTeam, spinKey}
	total    = kernel.Period{Kind: kernel.PeriodTotal}
)

// spinRequest is model request r: every request is on the team, the odd ones
// also on the key; each reserves exactly spinWorst (2 output tokens at 1
// nano-dollar each, no prompt) against a total budget of spinLimit, with no
// clamp (the model does not clamp).
func spinRequest(r int) *kernel.AdmitRequest {
	lim := &kernel.Limits{
		Budgets:   []kernel.BudgetWindow{{Limit: spinLimit, Period: total}},
		Shortfall: kernel.Reject,
	}
	scopes := []kernel.Scope{{Ref: spinTeam, Limits: lim}}
	if r%2 == 1 {
		scopes = []kernel.Scope{{Ref: spinKey, Limits: lim}, {Ref: spinTeam, Limits: lim}}
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

// spinReplay is a replay target: the kernel (one State, replaced on a Redis
// restart) or the Redis counters of each replica on one prefix.
type spinReplay interface {
	admit(now time.Time, replica int, req *kernel.AdmitRequest) bool
	settle(now time.Time, replica int, id string, cost int64) bool
	expire(now time.Time) []kernel.Settlement
	restart()
	seed(scope int, spent int64)
	usage(ref kernel.ScopeRef) (int64, int64)
}

type kernelReplay struct{ s *kernel.State }

func (k *kernelReplay) admit(now time.Time, _ int, req *kernel.AdmitRequest) bool {
	return k.s.Admit(now, req).Admitted
}

func (k *kernelReplay) settle(now time.Time, _ int, id string, cost int64) bool {
	_, ok := k.s.Settle(now, id, kernel.Usage{Output: cost}, kernel.StatusCompleted)
	return ok
}

func (k *kernelReplay) expire(now time.Time) []kernel.Settlement { return k.s.Expire(now) }
func (k *kernelReplay) restart()                                 { k.s = kernel.NewState() }
func (k *kernelReplay) seed(scope int, spent int64) {
	k.s.Seed(spinRefs[scope], total, traceBase, kernel.Money(spent))
}

func (k *kernelReplay) usage(ref kernel.ScopeRef) (int64, int64) {
	sp, rs := k.s.Usage(ref, total, traceBase)
	return int64(sp), int64(rs)
}

type redisReplay struct {
	t        *testing.T
	flush    func()
	replicas []*accounting.RedisCounters
	ledger   [2]int64
}

func (r *redisReplay) admit(now time.Time, replica int, req *kernel.AdmitRequest) bool {
	d, err := r.replicas[replica].Admit(context.Background(), now, req)
	require.NoError(r.t, err)
	return d.Admitted
}

func (r *redisReplay) settle(now time.Time, replica int, id string, cost int64) bool {
	_, ok, err := r.replicas[replica].Settle(context.Background(), now, id, kernel.Usage{Output: cost}, kernel.StatusCompleted)
	require.NoError(r.t, err)
	return ok
}

func (r *redisReplay) expire(now time.Time) []kernel.Settlement {
	out, err := r.replicas[0].Expire(context.Background(), now)
	require.NoError(r.t, err)
	return out
}

func (r *redisReplay) restart()                    { r.flush() }
func (r *redisReplay) seed(scope int, spent int64) { r.ledger[scope] = spent }
func (r *redisReplay) usage(ref kernel.ScopeRef) (int64, int64) {
	sp, rs, err := r.replicas[0].Usage(context.Background(), ref, total, traceBase)
	require.NoError(r.t, err)
	return int64(sp), int64(rs)
}

// seedFunc answers the Redis counters' seeding with what the model read from
// its ledger (zero before any restart).
func (r *redisReplay) seedFunc(_ context.Context, ref kernel.ScopeRef, _, _ time.Time) (kernel.Money, error) {
	if ref == spinKey {
		return kernel.Money(r.ledger[1]), nil
	}
	return kernel.Money(r.ledger[0]), nil
}

// replaySpin replays one simulation and fails on the first disagreement.
func replaySpin(t *testing.T, name string, ops [][]string, target spinReplay) {
	t.Helper()
	admittedAt := map[int]time.Time{}
	clock := 0
	tick := func() time.Time {
		clock++
		return traceBase.Add(time.Duration(clock) * time.Second)
	}
	for i, op := range ops {
		where := name + " op " + strconv.Itoa(i) + " " + strings.Join(op, " ")
		switch op[0] {
		case "admit":
			r, ok := atoi(t, op[1]), op[2] == "1"
			now := tick()
			require.Equal(t, ok, target.admit(now, r%spinReplicas, spinRequest(r)), where)
			if ok {
				admittedAt[r] = now
			}
		case "settle":
			r, c, ok := atoi(t, op[1]), atoi(t, op[2]), op[3] == "1"
			require.Equal(t, ok, target.settle(tick(), r%spinReplicas, idOf(r), int64(c)), where)
		case "expire":
			// The model's leases are equal: the oldest open one ends first, at
			// its admission + the lease.
			r := atoi(t, op[1])
			got := target.expire(admittedAt[r].Add(spinLease))
			require.Len(t, got, 1, where)
			require.Equal(t, idOf(r), got[0].ID, where)
			require.Equal(t, kernel.Money(spinWorst), got[0].Cost, where)
		case "restart":
			target.restart()
		case "seed":
			target.seed(atoi(t, op[1]), int64(atoi(t, op[2])))
		case "final":
			for s, ref := range spinRefs {
				sp, rs := target.usage(ref)
				require.Equal(t, [2]int64{int64(atoi(t, op[1+2*s])), int64(atoi(t, op[2+2*s]))}, [2]int64{sp, rs},
					"%s: spent and reserved of model scope %d", where, s)
			}
		default:
			t.Fatalf("%s: unknown operation", where)
		}
	}
}

// TestSpinSimulationsMatchKernelAndRedis replays random simulations of the
// replica model (formal/spin/replicas.pml) — admissions, settlements (some
// after their lease ended, some after a Redis restart), expiries, a restart
// and its re-seeding — against kernel.State and against the Redis counters of
// three replicas, requiring the same decisions and the same final spent and
// reserved.
func TestSpinSimulationsMatchKernelAndRedis(t *testing.T) {
	spin := tool(t, "spin", "spin")
	dir := t.TempDir()
	b, err := exec.CommandContext(t.Context(), "cp", "spin/replicas.pml", dir).CombinedOutput()
	require.NoError(t, err, "%s", b)

	runs := make([][][]string, 0, 40)
	kinds := map[string]int{}
	for seed := 1; seed <= 40; seed++ {
		ops := spinOps(t, spin, dir, seed)
		for _, op := range ops {
			k := op[0]
			if k == "settle" && op[3] == "0" {
				k = "late settle"
			}
			kinds[k]++
		}
		runs = append(runs, ops)
	}
	// The simulations must reach every kind of step, or they prove little.
	for _, k := range []string{"admit", "settle", "late settle", "expire", "restart", "seed", "final"} {
		require.Positive(t, kinds[k], "no %q in 40 simulations: %v", k, kinds)
	}

	for i, ops := range runs {
		replaySpin(t, "kernel run "+strconv.Itoa(i+1), ops, &kernelReplay{s: kernel.NewState()})
	}

	rdb := redisClient(t)
	for i, ops := range runs {
		p := newPrefix(t, rdb)
		r := &redisReplay{t: t, flush: func() { flushPrefix(t, rdb, p) }}
		for range spinReplicas {
			c := accounting.NewRedisCounters(rdb, r.seedFunc, accounting.WithPrefix(p))
			r.replicas = append(r.replicas, c)
		}
		replaySpin(t, "redis run "+strconv.Itoa(i+1), ops, r)
		for _, c := range r.replicas {
			c.Close()
		}
	}
}
