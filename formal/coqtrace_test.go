package formal_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
)

// The traces live in one UTC minute and one day: the Coq transcription has
// no window or minute rolls (docs/accounting.md).
var traceBase = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Scope numbers of the traces (the Coq ScopeRef) and their Go refs: every
// level of the hierarchy a request is admitted on — key, run, team, global
// and tag.
var traceRefs = []kernel.ScopeRef{
	{Kind: kernel.ScopeOrg, ID: "unused"}, // 0: no scope of the traces
	{Kind: kernel.ScopeKey, ID: "k1"},
	{Kind: kernel.ScopeKey, ID: "k2"},
	{Kind: kernel.ScopeTeam, ID: "t1"},
	{Kind: kernel.ScopeGlobal},
	{Kind: kernel.ScopeRun, ID: "key:k1/loop"}, // its counters expire (Limits.TTL)
	{Kind: kernel.ScopeTag, ID: "feature=search"},
}

// Scope numbers of the run and the tag.
const (
	traceRun = 5
	traceTag = 6
)

// Period numbers (the Coq Period): 0 total, 1 daily.
var tracePeriods = []kernel.Period{{Kind: kernel.PeriodTotal}, {Kind: kernel.PeriodDaily}}

type traceOp struct {
	kind   int // 1 admit, 2 settle, 3 expire
	at     time.Duration
	req    kernel.AdmitRequest
	id     int
	usage  kernel.Usage
	status kernel.Status
}

type traceCfg struct {
	limits [7]*kernel.Limits // by scope number
	ops    []traceOp
}

func idOf(n int) string { return "r" + strconv.Itoa(n) }

func numOf(id string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(id, "r"))
	if err != nil {
		panic(err)
	}
	return n
}

func refNum(ref kernel.ScopeRef) int {
	return slices.Index(traceRefs, ref)
}

// genTrace draws a configuration and an operation sequence.
func genTrace(rng *rand.Rand) traceCfg {
	var c traceCfg
	budgets := func(total, daily int64) []kernel.BudgetWindow {
		var bs []kernel.BudgetWindow
		if rng.IntN(4) > 0 {
			bs = append(bs, kernel.BudgetWindow{Limit: kernel.Money(rng.Int64N(total)), Period: tracePeriods[0]})
		}
		if rng.IntN(2) == 0 {
			bs = append(bs, kernel.BudgetWindow{Limit: kernel.Money(rng.Int64N(daily)), Period: tracePeriods[1]})
		}
		return bs
	}
	for i := 1; i <= 2; i++ {
		l := &kernel.Limits{
			Budgets:     budgets(40_000, 20_000),
			RPM:         rng.Int64N(8),
			TPM:         []int64{0, 3000, 20000}[rng.IntN(3)],
			MaxParallel: rng.Int64N(4),
			Mode:        kernel.BudgetMode(rng.IntN(4) / 3), // mostly strict
			Shortfall:   kernel.Shortfall(rng.IntN(2)),
		}
		if rng.IntN(3) == 0 {
			l.Models = []string{"small"}
		}
		if rng.IntN(10) == 0 {
			l.ExpiresAt = traceBase.Add(-time.Hour)
		}
		c.limits[i] = l
	}
	if rng.IntN(3) > 0 {
		c.limits[3] = &kernel.Limits{Budgets: budgets(60_000, 30_000), MaxParallel: rng.Int64N(5)}
	}
	if rng.IntN(2) == 0 {
		c.limits[4] = &kernel.Limits{Budgets: budgets(90_000, 90_000)}
	}
	// The run: a total budget and a rate, as a RunPolicy gives, and a TTL
	// short enough that its counters expire between its calls.
	run := &kernel.Limits{RPM: rng.Int64N(6), TTL: time.Duration(3+rng.IntN(10)) * 100 * time.Millisecond}
	if rng.IntN(4) > 0 {
		run.Budgets = []kernel.BudgetWindow{{Limit: kernel.Money(rng.Int64N(30_000)), Period: tracePeriods[0]}}
	}
	c.limits[traceRun] = run
	c.limits[traceTag] = &kernel.Limits{Budgets: budgets(50_000, 25_000)}
	price := kernel.Price{Input: kernel.Money(rng.Int64N(3_000_000)), Output: kernel.Money(1 + rng.Int64N(12_000_000))}
	if rng.IntN(2) == 0 {
		price.Reasoning = kernel.Money(rng.Int64N(20_000_000))
	}
	if rng.IntN(3) == 0 {
		price.CachedInput = kernel.Money(rng.Int64N(2_000_000))
	}

	var open []int
	next := 0
	at := time.Duration(0)
	n := 10 + rng.IntN(30)
	for range n {
		at += time.Duration(1+rng.IntN(3)) * 100 * time.Millisecond
		switch k := rng.IntN(10); {
		case k < 5:
			id := next
			if len(open) > 0 && rng.IntN(10) == 0 {
				id = open[rng.IntN(len(open))] // a duplicate id
			} else {
				next++
			}
			key := 1 + rng.IntN(2)
			scopes := []kernel.Scope{{Ref: traceRefs[key], Limits: c.limits[key]}}
			if rng.IntN(2) == 0 { // the run, right after the key (extproc's withRun)
				scopes = append(scopes, kernel.Scope{Ref: traceRefs[traceRun], Limits: c.limits[traceRun]})
			}
			scopes = append(scopes, kernel.Scope{Ref: traceRefs[3], Limits: c.limits[3]})
			scopes = append(scopes, kernel.Scope{Ref: traceRefs[4], Limits: c.limits[4]})
			if rng.IntN(2) == 0 { // a tag with a budget, last (extproc's withTags)
				scopes = append(scopes, kernel.Scope{Ref: traceRefs[traceTag], Limits: c.limits[traceTag]})
			}
			req := kernel.AdmitRequest{
				ID: idOf(id), Scopes: scopes,
				Model:            []string{"small", "large"}[rng.IntN(2)],
				PromptBytes:      rng.Int64N(3000),
				MaxTokens:        []int64{0, 1, 50, 500, 2000}[rng.IntN(5)],
				DefaultMaxTokens: []int64{0, 300}[rng.IntN(2)],
				Price:            price,
				Lease:            time.Duration(rng.IntN(30)) * 100 * time.Millisecond,
			}
			c.ops = append(c.ops, traceOp{kind: 1, at: at, req: req})
			open = append(open, id)
		case k < 8 && len(open) > 0:
			i := rng.IntN(len(open))
			u := kernel.Usage{Input: rng.Int64N(3000), Output: rng.Int64N(2000), Reasoning: rng.Int64N(100)}
			if rng.IntN(4) == 0 {
				u.CachedInput = rng.Int64N(500)
			}
			c.ops = append(c.ops, traceOp{kind: 2, at: at, id: open[i], usage: u, status: kernel.Status(rng.IntN(3))})
			if rng.IntN(5) > 0 {
				open = slices.Delete(open, i, i+1) // sometimes settled again later
			}
		default:
			c.ops = append(c.ops, traceOp{kind: 3, at: at})
		}
	}
	return c
}

// ---------- the Coq side ----------

func coqZ(v int64) string {
	if v < 0 {
		return fmt.Sprintf("(%d)", v)
	}
	return strconv.FormatInt(v, 10)
}

func coqBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func coqLimits(l *kernel.Limits, req *kernel.AdmitRequest, now time.Time) string {
	if l == nil {
		return "None"
	}
	var bs []string
	for _, b := range l.Budgets {
		bs = append(bs, fmt.Sprintf("mkBudget %s %d%%nat", coqZ(int64(b.Limit)), slices.IndexFunc(tracePeriods, b.Period.Equal)))
	}
	expired := !l.ExpiresAt.IsZero() && !now.Before(l.ExpiresAt)
	denied := len(l.Models) > 0 && !slices.Contains(l.Models, req.Model)
	mode, short := "Strict", "Clamp"
	if l.Mode == kernel.Estimate {
		mode = "Estimate"
	}
	if l.Shortfall == kernel.Reject {
		short = "Reject"
	}
	return fmt.Sprintf("Some (mkLimits [%s] %s %s %s %s %s %s %s)", strings.Join(bs, "; "),
		coqZ(l.RPM), coqZ(l.TPM), coqZ(l.MaxParallel), coqBool(expired), coqBool(denied), mode, short)
}

func coqOp(op *traceOp) string {
	now := coqZ(int64(op.at))
	switch op.kind {
	case 1:
		r := &op.req
		var scs []string
		for _, sc := range r.Scopes {
			scs = append(scs, fmt.Sprintf("mkScope %d%%nat (%s)", refNum(sc.Ref), coqLimits(sc.Limits, r, traceBase.Add(op.at))))
		}
		p := r.Price
		return fmt.Sprintf("OAdmit %s (mkAdmitRequest %d%%nat [%s] %s %s %s (mkPrice %s %s %s %s %s) %s)",
			now, numOf(r.ID), strings.Join(scs, "; "), coqZ(r.PromptBytes), coqZ(r.MaxTokens), coqZ(r.DefaultMaxTokens),
			coqZ(int64(p.Input)), coqZ(int64(p.CachedInput)), coqZ(int64(p.CacheWrite)), coqZ(int64(p.Output)),
			coqZ(int64(p.Reasoning)), coqZ(int64(r.Lease)))
	case 2:
		u := op.usage
		st := []string{"StatusCompleted", "StatusAborted", "StatusFailed", "StatusExpired"}[op.status]
		return fmt.Sprintf("OSettle %s %d%%nat (mkUsage %s %s %s %s %s) %s", now, op.id,
			coqZ(u.Input), coqZ(u.CachedInput), coqZ(u.CacheWrite), coqZ(u.Output), coqZ(u.Reasoning), st)
	default:
		return "OExpire " + now
	}
}

var coqInt = regexp.MustCompile(`-?\d+`)

// coqTraces computes every trace with the Coq transcription (one coqc run).
func coqTraces(t *testing.T, coqc string, traces []traceCfg) [][]int64 {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"Kernel.v", "Trace.v"} {
		b, err := os.ReadFile(filepath.Join("coq", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	var run strings.Builder
	run.WriteString("Require Import ZArith List.\nRequire Import Tollgate.Kernel Tollgate.Trace.\nImport ListNotations.\nOpen Scope Z_scope.\n")
	for i := range traces {
		var ops []string
		for j := range traces[i].ops {
			ops = append(ops, coqOp(&traces[i].ops[j]))
		}
		fmt.Fprintf(&run, "Compute trace [%s] [1; 2; 3; 4; 5; 6]%%nat [0; 1]%%nat [(%d%%nat, %s)].\n",
			strings.Join(ops, ";\n  "), traceRun, coqZ(int64(traces[i].limits[traceRun].TTL)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Run.v"), []byte(run.String()), 0o600))
	for _, f := range []string{"Kernel.v", "Trace.v", "Run.v"} {
		cmd := exec.CommandContext(t.Context(), coqc, "-q", "-Q", ".", "Tollgate", f)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "coqc %s: %s", f, out)
		if f != "Run.v" {
			continue
		}
		chunks := strings.Split(string(out), ": list Z")
		require.Len(t, chunks, len(traces)+1, "coqc output: %s", out)
		var res [][]int64
		for _, ch := range chunks[:len(traces)] {
			_, body, ok := strings.Cut(ch, "=")
			require.True(t, ok, "coqc output chunk %q", ch)
			var zs []int64
			for _, m := range coqInt.FindAllString(body, -1) {
				v, err := strconv.ParseInt(m, 10, 64)
				require.NoError(t, err)
				zs = append(zs, v)
			}
			res = append(res, zs)
		}
		return res
	}
	return nil
}

// ---------- the Go side ----------

// accounts is what the traces run against: kernel.State or the Redis counters.
type accounts interface {
	admit(now time.Time, req *kernel.AdmitRequest) kernel.Decision
	settle(now time.Time, id string, u kernel.Usage, st kernel.Status) (kernel.Settlement, bool)
	expire(now time.Time) []kernel.Settlement
	usage(ref kernel.ScopeRef, p kernel.Period, now time.Time) (kernel.Money, kernel.Money)
	inFlight(ref kernel.ScopeRef) int64
}

type kernelAccounts struct{ s *kernel.State }

func (k kernelAccounts) admit(now time.Time, req *kernel.AdmitRequest) kernel.Decision {
	return k.s.Admit(now, req)
}

func (k kernelAccounts) settle(now time.Time, id string, u kernel.Usage, st kernel.Status) (kernel.Settlement, bool) {
	return k.s.Settle(now, id, u, st)
}
func (k kernelAccounts) expire(now time.Time) []kernel.Settlement { return k.s.Expire(now) }
func (k kernelAccounts) usage(ref kernel.ScopeRef, p kernel.Period, now time.Time) (kernel.Money, kernel.Money) {
	return k.s.Usage(ref, p, now)
}
func (k kernelAccounts) inFlight(ref kernel.ScopeRef) int64 { return k.s.InFlight(ref) }

// redisAccounts runs a trace on the Redis scripts. A run's hash expires by
// its Redis TTL (at least a minute, in real time); the trace's clock is not
// Redis's, so redisAccounts keeps the kernel's TTL clock (kernel.State's
// ttls: the last admission or settlement of a scope with a TTL) and deletes
// the hash when the kernel forgets the scope, as its TTL would.
type redisAccounts struct {
	t      *testing.T
	c      *accounting.RedisCounters
	rdb    *goredis.Client
	prefix string
	last   map[kernel.ScopeRef]time.Time
	ttl    map[kernel.ScopeRef]time.Duration
	forgot *int // hashes deleted
}

func (r redisAccounts) touch(refs []kernel.ScopeRef, now time.Time) {
	for _, ref := range refs {
		if l, ok := r.last[ref]; ok && l.Before(now) {
			r.last[ref] = now
		}
	}
}

func (r redisAccounts) admit(now time.Time, req *kernel.AdmitRequest) kernel.Decision {
	d, err := r.c.Admit(context.Background(), now, req)
	require.NoError(r.t, err)
	if d.Admitted {
		for _, sc := range req.Scopes {
			if sc.Limits != nil && sc.Limits.TTL > 0 {
				r.last[sc.Ref], r.ttl[sc.Ref] = now, sc.Limits.TTL
			}
		}
	}
	return d
}

func (r redisAccounts) settle(now time.Time, id string, u kernel.Usage, st kernel.Status) (kernel.Settlement, bool) {
	s, ok, err := r.c.Settle(context.Background(), now, id, u, st)
	require.NoError(r.t, err)
	if ok {
		r.touch(s.Scopes, now)
	}
	return s, ok
}

func (r redisAccounts) expire(now time.Time) []kernel.Settlement {
	out, err := r.c.Expire(context.Background(), now)
	require.NoError(r.t, err)
	for _, s := range out {
		r.touch(s.Scopes, now)
	}
	for ref, l := range r.last {
		if !l.Add(r.ttl[ref]).After(now) && r.inFlight(ref) == 0 {
			key := "{" + r.prefix + "}:s:" + strconv.Itoa(int(ref.Kind)) + ":" + ref.ID
			require.NoError(r.t, r.rdb.Del(context.Background(), key).Err())
			delete(r.last, ref)
			*r.forgot++
		}
	}
	return out
}

func (r redisAccounts) usage(ref kernel.ScopeRef, p kernel.Period, now time.Time) (kernel.Money, kernel.Money) {
	sp, rs, err := r.c.Usage(context.Background(), ref, p, now)
	require.NoError(r.t, err)
	return sp, rs
}

func (r redisAccounts) inFlight(ref kernel.ScopeRef) int64 {
	n, err := r.c.InFlight(context.Background(), ref)
	require.NoError(r.t, err)
	return n
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// runTrace runs a trace and encodes it as Trace.v does. Expiries are sorted by
// id (the kernel returns them by deadline, the transcription in admission
// order). pending < 0 leaves the pending count out.
func runTrace(a accounts, tr traceCfg, pending func() int) []int64 {
	var out []int64
	now := traceBase
	for _, op := range tr.ops {
		now = traceBase.Add(op.at)
		switch op.kind {
		case 1:
			d := a.admit(now, &op.req)
			scope := int64(-1)
			if !d.Admitted {
				scope = int64(refNum(d.Scope))
			}
			out = append(out, 1, b2i(d.Admitted), int64(d.Reason), scope, d.MaxTokens, b2i(d.Clamped), int64(d.Reserved))
		case 2:
			s, ok := a.settle(now, idOf(op.id), op.usage, op.status)
			out = append(out, 2, b2i(ok), int64(s.Cost), int64(s.Reserved))
		default:
			ss := a.expire(now)
			out = append(out, 3, int64(len(ss)))
			out = append(out, expiryPairs(ss)...)
		}
	}
	out = append(out, 4)
	for _, ref := range traceRefs[1:] {
		out = append(out, a.inFlight(ref))
		for _, p := range tracePeriods {
			sp, rs := a.usage(ref, p, now)
			out = append(out, int64(sp), int64(rs))
		}
	}
	if pending != nil {
		out = append(out, int64(pending()))
	}
	return out
}

func expiryPairs(ss []kernel.Settlement) []int64 {
	slices.SortFunc(ss, func(a, b kernel.Settlement) int { return numOf(a.ID) - numOf(b.ID) })
	var out []int64
	for _, s := range ss {
		out = append(out, int64(numOf(s.ID)), int64(s.Cost))
	}
	return out
}

// sortCoqExpiries sorts the (id, cost) pairs of each expiry in a Coq output.
func sortCoqExpiries(zs []int64) []int64 {
	out := slices.Clone(zs)
	for i := 0; i < len(out); {
		switch out[i] {
		case 1:
			i += 7
		case 2:
			i += 4
		case 3:
			n := int(out[i+1])
			pairs := out[i+2 : i+2+2*n]
			type pr struct{ id, cost int64 }
			ps := make([]pr, n)
			for j := range n {
				ps[j] = pr{pairs[2*j], pairs[2*j+1]}
			}
			slices.SortFunc(ps, func(a, b pr) int { return int(a.id - b.id) })
			for j, p := range ps {
				pairs[2*j], pairs[2*j+1] = p.id, p.cost
			}
			i += 2 + 2*n
		default: // 4: the final counters
			return out
		}
	}
	return out
}

// maskUnbudgeted masks, in the final counters, what Redis does not keep: a
// window is a Redis field only when its scope has a budget of that period
// (the kernel tracks every scope's total window), and the pending count.
func maskUnbudgeted(tr traceCfg, zs []int64) []int64 {
	out := slices.Clone(zs)
	i := 0
	for i < len(out) && out[i] != 4 {
		i = nextIndex(out, i)
	}
	pos := i + 1
	for n := 1; n < len(traceRefs); n++ {
		pos++ // in flight
		for p := range tracePeriods {
			l := tr.limits[n]
			if l == nil || !slices.ContainsFunc(l.Budgets, func(b kernel.BudgetWindow) bool { return b.Period.Equal(tracePeriods[p]) }) {
				out[pos], out[pos+1] = 0, 0
			}
			pos += 2
		}
	}
	return out[:pos]
}

func nextIndex(zs []int64, i int) int {
	switch zs[i] {
	case 1:
		return i + 7
	case 2:
		return i + 4
	case 3:
		return i + 2 + 2*int(zs[i+1])
	}
	return len(zs)
}

// TestCoqTracesMatchKernelAndRedis runs generated operation sequences through
// the Coq transcription of the kernel (formal/coq/Kernel.v, computed by coqc),
// through kernel.State and through the Redis scripts, and requires the same
// decisions, settlements, expiries and final counters.
func TestCoqTracesMatchKernelAndRedis(t *testing.T) {
	coqc := tool(t, "coqc", "coq")
	rng := rand.New(rand.NewPCG(21, 2026))
	traces := make([]traceCfg, 40)
	for i := range traces {
		traces[i] = genTrace(rng)
	}
	want := coqTraces(t, coqc, traces)

	admitted, refused := 0, 0
	refusedBy := map[int64]int{} // refusals by scope number
	for i, tr := range traces {
		w := sortCoqExpiries(want[i])
		s := kernel.NewState()
		got := runTrace(kernelAccounts{s}, tr, s.Pending)
		require.Equal(t, w, got, "trace %d: the kernel and its Coq transcription disagree", i)
		for j := 0; j < len(w) && w[j] != 4; j = nextIndex(w, j) {
			if w[j] == 1 {
				if w[j+1] == 1 {
					admitted++
				} else {
					refused++
					refusedBy[w[j+3]]++
				}
			}
		}
	}
	// The traces must exercise both outcomes, or they prove little.
	require.Greater(t, admitted, 50)
	require.Greater(t, refused, 50)
	for n := 1; n < len(traceRefs); n++ {
		require.Positive(t, refusedBy[int64(n)], "no trace refused at %v: its level is not exercised", traceRefs[n])
	}

	rdb := redisClient(t)
	forgot := 0
	for i, tr := range traces {
		prefix := newPrefix(t, rdb)
		c := accounting.NewRedisCounters(rdb, func(context.Context, kernel.ScopeRef, time.Time, time.Time) (kernel.Money, error) {
			return 0, nil
		}, accounting.WithPrefix(prefix))
		ra := redisAccounts{t: t, c: c, rdb: rdb, prefix: prefix, last: map[kernel.ScopeRef]time.Time{}, ttl: map[kernel.ScopeRef]time.Duration{}, forgot: &forgot}
		got := runTrace(ra, tr, nil)
		c.Close()
		require.Equal(t, maskUnbudgeted(tr, sortCoqExpiries(want[i])), maskUnbudgeted(tr, got),
			"trace %d: the Redis scripts and the Coq transcription disagree", i)
	}
	require.Greater(t, forgot, 10, "the run's counters must expire in the traces (its TTL), or the expiry is not compared")
}
