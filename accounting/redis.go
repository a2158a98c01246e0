package accounting

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Errors of this package.
var (
	// ErrUnavailable: Redis (or, for seeding, the ledger) cannot be reached and
	// the failure policy is FailClosed. The gateway answers 503.
	ErrUnavailable = errors.New("accounting: redis counters unavailable")
	errClosed      = errors.New("accounting: redis counters closed")
)

// SeedFunc reads what the durable ledger charged to scope for requests that
// ended in [since, until) (zero until: no upper bound); store.Spend.ScopeSpend.
type SeedFunc func(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error)

// FailurePolicy says what Admit does when Redis cannot be reached.
type FailurePolicy uint8

// Failure policies.
const (
	// FailClosed refuses admission with ErrUnavailable.
	FailClosed FailurePolicy = iota
	// LocalFallback admits against an in-process kernel.State, seeded from the
	// ledger: limits then hold per replica only (N replicas admit up to N× a
	// rate limit; budgets see the ledger plus this replica's own spend).
	LocalFallback
)

// RedisOption configures RedisCounters.
type RedisOption func(*options)

type options struct {
	prefix   string
	policy   FailurePolicy
	logger   *slog.Logger
	scopeTTL time.Duration
	workers  int
	batch    int
	timeout  time.Duration
	grace    time.Duration // WithRejoinGrace
	// checkpoint is how often streams' usage is written (WithCheckpoints; 0: off).
	checkpoint time.Duration
}

// WithPrefix sets the key prefix (default "tg"). Every key is in the hash slot
// of "{prefix}", so the scripts work on Redis Cluster too.
func WithPrefix(p string) RedisOption { return func(o *options) { o.prefix = p } }

// WithFailurePolicy sets what happens when Redis is unreachable (default FailClosed).
func WithFailurePolicy(p FailurePolicy) RedisOption { return func(o *options) { o.policy = p } }

// WithPipeline sets how many batches may be in flight (workers, default 1)
// and how many admissions and settlements one batch (one EVALSHA) carries at
// most (default 128). One batch in flight is a group commit: while it runs,
// the next one fills. Redis runs scripts one at a time, so more workers mostly
// make batches smaller; in BenchmarkAdmitSettle (64 callers, Redis on the same
// 2-core machine) 1 worker beat 2 and 4 on Redis CPU per pair and on pairs/s.
// More may pay when Redis is far away (a long round trip per batch).
func WithPipeline(workers, maxBatch int) RedisOption {
	return func(o *options) { o.workers, o.batch = max(workers, 1), max(maxBatch, 1) }
}

// WithTimeout bounds one batch's round trip to Redis (default 3s).
func WithTimeout(d time.Duration) RedisOption {
	return func(o *options) { o.timeout = max(d, time.Millisecond) }
}

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) RedisOption { return func(o *options) { o.logger = l } }

// RedisCounters are the admission counters shared by every replica through Redis:
// in-flight requests, requests and tokens of the current minute per scope, and
// spent and reserved money per budget window, with open reservations and
// their leases. Safe for concurrent use.
type RedisCounters struct {
	rdb  goredis.UniversalClient
	seed SeedFunc
	opts options
	tag  string // "{prefix}:"
	pipe *pipeliner

	mu          sync.Mutex
	cache       map[string]*record // reservations admitted by this replica, for Settle
	corrections []correction       // settlements Redis has not counted yet (settleWithout)
	unc         uncommitted        // settlements the ledger has not committed (redis_uncommitted.go)
	epoch       string             // the Redis epoch this replica registered under (redis_rejoin.go)
	members     []string           // the other replicas alive at the last Sync

	name     string     // this replica in the members hash
	rejoinMu sync.Mutex // one rejoin at a time
	lastSync int64      // the value of this replica in the members hash (guarded by rejoinMu)

	local       *kernel.State
	localSeeded map[windowID]bool
	localMu     sync.Mutex

	cpMu   sync.Mutex                  // guards cps and cpGone (checkpoint.go)
	cps    map[string]*usageCheckpoint // streams' usage, by reservation id
	cpGone []string                    // checkpoints written for reservations since ended
}

type windowID struct {
	scope  kernel.ScopeRef
	period string
	start  int64
}

// NewRedisCounters returns RedisCounters over client; seed rebuilds budget windows from the ledger.
func NewRedisCounters(client goredis.UniversalClient, seed SeedFunc, opts ...RedisOption) *RedisCounters {
	o := options{
		prefix: "tg", logger: slog.New(slog.DiscardHandler), scopeTTL: 24 * time.Hour,
		workers: 1, batch: 128, timeout: 3 * time.Second, grace: 5 * time.Second,
		checkpoint: DefaultCheckpointEvery,
	}
	for _, opt := range opts {
		opt(&o)
	}
	c := &RedisCounters{
		rdb: client, seed: seed, opts: o, tag: "{" + o.prefix + "}:",
		cache: make(map[string]*record), local: kernel.NewState(), localSeeded: make(map[windowID]bool),
		name: newReplicaName(), cps: make(map[string]*usageCheckpoint),
	}
	c.pipe = newPipeliner(client, c.leasesKey(), o.workers, o.batch, o.timeout)
	return c
}

// Close stops the pipeline goroutines. It does not close the Redis client.
func (c *RedisCounters) Close() { c.pipe.close() }

// record is a reservation as stored in Redis (field "d" of its hash, JSON).
type record struct {
	ID         string            `json:"-"`
	Model      string            `json:"m"`
	Price      kernel.Price      `json:"p"`
	Scopes     []kernel.ScopeRef `json:"s"`
	Periods    [][]kernel.Period `json:"b,omitempty"` // per scope: the periods of its budgets
	AdmittedAt int64             `json:"a"`
	Deadline   int64             `json:"dl"`
	Minute     int64             `json:"mn"`
	Output     int64             `json:"o,omitempty"` // the output bound before any clamp (checkpoint.go)
	Reserved   kernel.Money      `json:"-"`
	Worst      kernel.Money      `json:"-"` // charged on expiry
	Tokens     int64             `json:"-"` // counted towards tpm in Minute
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (c *RedisCounters) scopeKey(ref kernel.ScopeRef) string {
	return c.tag + "s:" + strconv.Itoa(int(ref.Kind)) + ":" + ref.ID
}

func (c *RedisCounters) recordKey(id string) string { return c.tag + "r:" + id }
func (c *RedisCounters) leasesKey() string          { return c.tag + "leases" }

// span is one budget window: field "<period>:<start>:" of its scope's hash
// (seeded marker, spent, reserved; packed, see batchLua).
type span struct {
	key        string // the scope's hash
	period     string
	startS     string // start in unix nanos
	field      string // "<period>:<start>:"
	scope      kernel.ScopeRef
	scopeIdx   int // 1-based index of the scope in the request
	start, end time.Time
	startN     int64
}

// windowAt is the window of p current at now in ref's hash, key.
func windowAt(key string, ref kernel.ScopeRef, p kernel.Period, now time.Time) span {
	start, end := p.Window(now)
	sp := span{scope: ref, start: start, end: end, startN: startNanos(start), key: key, period: p.String()}
	sp.startS = strconv.FormatInt(sp.startN, 10)
	sp.field = sp.period + ":" + sp.startS + ":"
	return sp
}

// windowField is the field of windowAt(…, p, t) alone; period is p.String().
func windowField(period string, p kernel.Period, t time.Time) string {
	start, _ := p.Window(t)
	return period + ":" + strconv.FormatInt(startNanos(start), 10) + ":"
}

// startNanos is a window's start in unix nanos; the zero time (a window with
// no start) is MinInt64.
func startNanos(start time.Time) int64 {
	if start.IsZero() {
		return math.MinInt64
	}
	return start.UnixNano()
}

// Admit decides on req at now with the rules of kernel.State.Admit, atomically
// over all scopes of the request and all replicas.
func (c *RedisCounters) Admit(ctx context.Context, now time.Time, req *kernel.AdmitRequest) (kernel.Decision, error) {
	if d, refused := kernel.UnpricedRefusal(req); refused { // as kernel.State.Admit, before any counter
		return d, nil
	}
	d, err := c.admitRedis(ctx, now, req)
	if err == nil || !errors.Is(err, ErrUnavailable) || c.opts.policy != LocalFallback {
		return d, err
	}
	c.opts.logger.Warn("redis: unreachable; admitting from local counters", "err", err)
	return c.admitLocal(ctx, now, req)
}

func (c *RedisCounters) admitRedis(ctx context.Context, now time.Time, req *kernel.AdmitRequest) (kernel.Decision, error) {
	nowN := now.UnixNano()
	minute := floorDiv(nowN, int64(time.Minute))
	minuteLeft := time.Duration((minute+1)*int64(time.Minute) - nowN)

	mode, shortfall := kernel.Strict, kernel.Clamp
	if len(req.Scopes) > 0 && req.Scopes[0].Limits != nil {
		mode, shortfall = req.Scopes[0].Limits.Mode, req.Scopes[0].Limits.Shortfall
	}
	inBound := max(req.PromptBytes, 0)
	outBound := req.MaxTokens
	if outBound <= 0 {
		outBound = req.DefaultMaxTokens
	}
	if outBound <= 0 {
		outBound = kernel.DefaultOutputBound
	}
	// Split the input cost and the output price so that Lua's doubles stay exact:
	// input cost = qi·1e6 + ri (in nano-USD·1e-6), output price = qo·1e6 + ro.
	inPrice, outPrice := bounds(req.Price)
	hi, lo := bits.Mul64(uint64(inBound), uint64(inPrice))
	qi, ri := divmod1e6(hi, lo)
	qo, ro := int64(outPrice)/1_000_000, int64(outPrice)%1_000_000
	estTokens := inBound/4 + min(inBound%4, 1)

	lease := req.Lease
	if lease <= 0 {
		lease = kernel.DefaultLease
	}
	rec := &record{
		ID: req.ID, Model: req.Model, Price: req.Price, AdmittedAt: nowN, Minute: minute, Output: outBound,
		Deadline: satAdd(nowN, int64(lease)),
		Scopes:   make([]kernel.ScopeRef, len(req.Scopes)),
	}
	for i := range req.Scopes {
		rec.Scopes[i] = req.Scopes[i].Ref
	}
	var spans []span
	budgets := make([]int64, 0, 4)
	// The record as the script writes it when the output bound stays as it is
	// (the common case): "<reserved> <worst> <tokens> <minute> " + JSON.
	head := make([]byte, 0, 512)
	worst, ok := worstOf(outBound, qi, ri, qo, ro)
	tokens, reserved := inBound+outBound, worst
	if mode == kernel.Estimate {
		tokens, reserved = estTokens, 0
	}
	if ok && tokens >= 0 && tokens < maxExact {
		head = fmt.Appendf(head, "%d %d %d %d ", reserved, worst, tokens, minute)
	} else {
		worst = -1 // the script formats the record itself
	}
	o := newOp(opAdmit, 3+len(req.Scopes), 17+7*len(req.Scopes)+4, 6)
	o.keys = append(o.keys, c.recordKey(req.ID))
	o.num(int64(len(req.Scopes)), 0, minute, int64(mode), int64(shortfall), inBound, outBound,
		qi, ri, qo, ro, leaseScore(rec.Deadline), estTokens, int64(c.opts.scopeTTL/time.Second),
		int64((lease+24*time.Hour)/time.Millisecond), worst, int64(len(head)))
	for i := range req.Scopes {
		key := c.scopeKey(req.Scopes[i].Ref)
		o.keys = append(o.keys, key)
		lim := req.Scopes[i].Limits
		if lim == nil {
			o.num(0, 0, 0, 0, 0, 0, 0)
			continue
		}
		expired := !lim.ExpiresAt.IsZero() && !now.Before(lim.ExpiresAt)
		denied := len(lim.Models) > 0 && !slices.Contains(lim.Models, req.Model)
		has := int64(1)
		if lim.TTL > 0 {
			// The hash outlives every reservation admitted up to now (and the
			// ledger seeds the run again once it has expired).
			has = 1 + int64((max(lim.TTL, lease)+time.Minute)/time.Second)
		}
		o.num(has, b2i(expired), b2i(denied), lim.MaxParallel, lim.RPM, lim.TPM, int64(len(lim.Budgets)))
		var periods []kernel.Period
		for _, b := range lim.Budgets {
			sp := windowAt(key, req.Scopes[i].Ref, b.Period, now)
			sp.scopeIdx = i + 1
			wi := slices.IndexFunc(spans, func(x span) bool { return x.key == sp.key && x.field == sp.field }) + 1
			if wi == 0 {
				spans = append(spans, sp)
				wi = len(spans)
				periods = append(periods, b.Period)
			}
			limit := int64(b.Limit)
			if b.Soft {
				limit = -1 - limit // admitLua: a soft window
			}
			budgets = append(budgets, int64(wi), limit)
		}
		if len(periods) > 0 {
			if rec.Periods == nil {
				rec.Periods = make([][]kernel.Period, len(req.Scopes))
			}
			rec.Periods[i] = periods
		}
	}
	binary.LittleEndian.PutUint64(o.nums[8*4:], math.Float64bits(float64(len(spans)))) // nW, A[5]
	doc, err := appendRecordJSON(head, rec)
	if err != nil {
		return kernel.Decision{}, fmt.Errorf("redis: encode reservation: %w", err)
	}
	o.strs = append(o.strs, string(doc), req.ID)
	for _, sp := range spans {
		o.num(int64(sp.scopeIdx))
		o.strs = append(o.strs, sp.field)
	}
	o.num(budgets...)
	// Checked when a window needs seeding: the epoch this replica registered
	// under, and the replicas still re-registering (redis_rejoin.go).
	o.keys = append(o.keys, c.epochKey(), c.rejoinKey())
	o.strs = append(o.strs, c.currentEpoch())

	rejoins, waitUntil := 0, time.Time{}
	for attempt := 0; ; attempt++ {
		v, err := c.pipe.do(ctx, o)
		if err != nil {
			return kernel.Decision{}, unavailable("admit", err)
		}
		res, ok := v.([]any)
		if !ok || len(res) == 0 {
			return kernel.Decision{}, fmt.Errorf("redis: admit: unexpected reply %v", v)
		}
		switch code := toInt(res[0]); code {
		case replyDuplicate:
			d := kernel.Decision{Reason: kernel.ReasonDuplicate}
			if len(req.Scopes) > 0 {
				d.Scope = req.Scopes[0].Ref
			}
			return d, nil
		case replyNeedSeed:
			if attempt > 3 {
				return kernel.Decision{}, fmt.Errorf("%w: budget windows not seeded after %d attempts", ErrUnavailable, attempt)
			}
			idx, _ := res[1].([]any)
			if err := c.seedWindows(ctx, spans, idx, o.strs[len(o.strs)-1]); err != nil {
				return kernel.Decision{}, err
			}
			continue
		case replyRejoin:
			if rejoins++; rejoins > 3 {
				return kernel.Decision{}, fmt.Errorf("%w: Redis lost its data again while re-registering", ErrUnavailable)
			}
			if err := c.rejoin(ctx, now); err != nil {
				return kernel.Decision{}, err
			}
			o.strs[len(o.strs)-1] = c.currentEpoch()
			attempt--
			continue
		case replyWait:
			if waitUntil.IsZero() {
				waitUntil = time.Now().Add(c.opts.grace + time.Second)
			}
			if err := waitRejoin(ctx, waitUntil); err != nil {
				return kernel.Decision{}, err
			}
			attempt--
			continue
		case replyRejected:
			reason := reasonOf(toInt(res[1]))
			i := int(toInt(res[2])) - 1
			d := kernel.Decision{Reason: reason, Scope: req.Scopes[i].Ref}
			switch reason {
			case kernel.ReasonParallelLimit:
				d.RetryAfter = time.Second
			case kernel.ReasonRequestLimit, kernel.ReasonTokenLimit:
				d.RetryAfter = minuteLeft
			}
			d.RateLimit = rateInfo(req.Scopes, res[3:], minuteLeft)
			return d, nil
		case replyAdmitted:
			n, reserved := toInt(res[1]), kernel.Money(toInt(res[3]))
			rec.Reserved, rec.Worst, rec.Tokens = reserved, kernel.Money(toInt(res[2])), toInt(res[4])
			c.mu.Lock()
			c.cache[req.ID] = rec
			c.mu.Unlock()
			counts := res[5:min(len(res), 5+2*len(req.Scopes))]
			return kernel.Decision{
				Admitted: true, Reason: kernel.ReasonOK, MaxTokens: n, Clamped: n < outBound, Reserved: reserved,
				RateLimit: rateInfo(req.Scopes, counts, minuteLeft),
				Warnings:  softWarnings(req.Scopes, res[5+len(counts):]),
			}, nil
		default:
			return kernel.Decision{}, fmt.Errorf("redis: admit: unexpected reply %v", res)
		}
	}
}

// seedWindows reads the ledger's spend of the windows Redis has not seen since
// it started (or since they began) and marks them seeded, unless Redis lost
// its data since the admission found them unseeded under epoch (the admission
// then rejoins and seeds again).
func (c *RedisCounters) seedWindows(ctx context.Context, spans []span, idx []any, epoch string) error {
	keys := make([]string, 0, 1+len(idx))
	args := make([]any, 0, 2+3*len(idx))
	keys = append(keys, c.epochKey())
	args = append(args, int64(c.opts.scopeTTL/time.Second), epoch)
	for _, x := range idx {
		sp := spans[toInt(x)-1]
		var until time.Time
		if !sp.end.Equal(kernel.EndOfTime) {
			until = sp.end
		}
		spent, err := c.seed(ctx, sp.scope, sp.start, until)
		if err != nil {
			return fmt.Errorf("%w: seed %v from the ledger: %w", ErrUnavailable, sp.scope, err)
		}
		keys = append(keys, sp.key)
		args = append(args, sp.period, sp.startS, int64(spent))
	}
	if err := seedLua.Run(ctx, c.rdb, keys, args...).Err(); err != nil {
		return unavailable("seed", err)
	}
	return nil
}

// Settle charges the exact cost of u to reservation id at now (kernel.State.Settle).
// ok is false when id is not open (unknown, already settled or expired).
func (c *RedisCounters) Settle(ctx context.Context, now time.Time, id string, u kernel.Usage, st kernel.Status) (kernel.Settlement, bool, error) {
	return c.settle(ctx, now, id, u, nil, st)
}

// SettleAt is Settle at price p rather than the admitted price
// (kernel.State.SettleAt).
func (c *RedisCounters) SettleAt(ctx context.Context, now time.Time, id string, u kernel.Usage, p kernel.Price, st kernel.Status) (kernel.Settlement, bool, error) {
	return c.settle(ctx, now, id, u, &p, st)
}

func (c *RedisCounters) settle(ctx context.Context, now time.Time, id string, u kernel.Usage, p *kernel.Price, st kernel.Status) (kernel.Settlement, bool, error) {
	c.forgetCheckpoint(id)
	if s, ok := c.settleLocal(now, id, u, p, st); ok {
		return s, true, nil
	}
	c.mu.Lock()
	rec := c.cache[id]
	c.mu.Unlock()
	cached := rec != nil
	if !cached {
		var err error
		rec, err = c.load(ctx, id)
		if err != nil {
			return kernel.Settlement{}, false, err
		}
		if rec == nil {
			return kernel.Settlement{}, false, nil
		}
	}
	price := rec.Price
	if p != nil {
		price = *p
	}
	cost := kernel.Cost(price, u)
	ok, charged, reserved, err := c.close(ctx, now, rec, int64(cost), true, u.Total())
	if cached && err == nil && !ok {
		// Gone: Redis lost its data, or (after its lease) the lease loop
		// expired it. Re-register what this replica holds (this reservation
		// too; nothing when the epoch is unchanged), then close it again.
		if err = c.rejoin(ctx, now); err == nil {
			ok, charged, reserved, err = c.close(ctx, now, rec, int64(cost), true, u.Total())
		}
	}
	if cached && (err != nil || !ok && now.UnixNano() < rec.Deadline) {
		// This replica admitted the request and knows its price: the
		// settlement stands whatever happened to Redis (see settleWithout).
		out := c.settleWithout(now, rec, u, cost, st, err)
		out.Unpriced = price.Unpriced
		return out, true, nil
	}
	if err != nil {
		return kernel.Settlement{}, false, err
	}
	c.mu.Lock()
	delete(c.cache, id)
	if ok {
		c.settledLocked(correction{rec: rec, at: now, cost: charged})
	}
	c.mu.Unlock()
	if !ok {
		return kernel.Settlement{}, false, nil
	}
	out := settlement(rec, now, u, charged, reserved, st)
	out.Unpriced = price.Unpriced
	return out, true, nil
}

func settlement(rec *record, now time.Time, u kernel.Usage, cost, reserved kernel.Money, st kernel.Status) kernel.Settlement {
	return kernel.Settlement{
		ID: rec.ID, Scopes: slices.Clone(rec.Scopes), Model: rec.Model, Usage: u, Cost: cost, Reserved: reserved,
		Status: st, AdmittedAt: time.Unix(0, rec.AdmittedAt), SettledAt: now, Unpriced: rec.Price.Unpriced,
	}
}

// load reads a reservation record from Redis; nil when there is none. The
// record is "<reserved> <worst> <tokens> <minute> <JSON>".
func (c *RedisCounters) load(ctx context.Context, id string) (*record, error) {
	v, err := c.rdb.Get(ctx, c.recordKey(id)).Result()
	if errors.Is(err, goredis.Nil) || err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE") {
		return nil, nil // none, or a record of an older layout (a hash): treated as gone
	}
	if err != nil {
		return nil, unavailable("settle", err)
	}
	f := strings.SplitN(v, " ", 5)
	if len(f) != 5 {
		return nil, fmt.Errorf("redis: decode reservation %q: %d fields", id, len(f))
	}
	rec := &record{ID: id}
	if err := json.Unmarshal([]byte(f[4]), rec); err != nil {
		return nil, fmt.Errorf("redis: decode reservation %q: %w", id, err)
	}
	rec.Reserved, rec.Worst = kernel.Money(parseInt(f[0])), kernel.Money(parseInt(f[1]))
	rec.Tokens, rec.Minute = parseInt(f[2]), parseInt(f[3])
	return rec, nil
}

// close runs settleLua for rec; cost < 0 charges the worst cost (expiry). The
// windows a scope reserved in are those of its budget periods at admission.
func (c *RedisCounters) close(ctx context.Context, now time.Time, rec *record, cost int64, fix bool, actual int64) (bool, kernel.Money, kernel.Money, error) {
	nowN := now.UnixNano()
	o := newOp(opSettle, 1+len(rec.Scopes), 10+len(rec.Scopes), 5)
	o.keys = append(o.keys, c.recordKey(rec.ID))
	o.num(int64(len(rec.Scopes)), cost, b2i(fix), actual, floorDiv(nowN, int64(time.Minute)),
		int64(rec.Reserved), rec.Tokens, rec.Minute, int64(rec.Worst), int64(c.opts.scopeTTL/time.Second))
	o.strs = append(o.strs, rec.ID)
	admitted := time.Unix(0, rec.AdmittedAt)
	for i, ref := range rec.Scopes {
		o.keys = append(o.keys, c.scopeKey(ref))
		var periods []kernel.Period
		if i < len(rec.Periods) {
			periods = rec.Periods[i]
		}
		o.num(int64(len(periods)))
		for _, p := range periods {
			name := p.String()
			o.strs = append(o.strs, windowField(name, p, admitted), windowField(name, p, now))
		}
	}
	res, err := c.pipe.do(ctx, o)
	if err != nil {
		return false, 0, 0, unavailable("settle", err)
	}
	arr, ok := res.([]any)
	if !ok {
		return false, 0, 0, nil
	}
	return true, kernel.Money(toInt(arr[1])), kernel.Money(toInt(arr[2])), nil
}

// Expire settles every reservation whose lease ended by now with StatusExpired
// (kernel.State.Expire), oldest deadline first: a stream at the usage of its
// last checkpoint plus an allowance (checkpoint.go), anything else at its
// worst-case cost.
func (c *RedisCounters) Expire(ctx context.Context, now time.Time) ([]kernel.Settlement, error) {
	out := c.expireLocal(now)
	if err := c.applyCorrections(ctx); err != nil {
		return out, err
	}
	nowN := now.UnixNano()
	ids, err := c.rdb.ZRangeByScore(ctx, c.leasesKey(), &goredis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(leaseScore(nowN), 10), Count: 10000,
	}).Result()
	if err != nil {
		return out, unavailable("expire", err)
	}
	recs := make([]*record, 0, len(ids))
	for _, id := range ids {
		rec, err := c.load(ctx, id)
		if err != nil {
			return out, err
		}
		if rec == nil {
			_ = c.rdb.ZRem(ctx, c.leasesKey(), id).Err() // the record's safety TTL ended
			continue
		}
		rec.ID = id
		if rec.Deadline <= nowN {
			recs = append(recs, rec)
		}
	}
	slices.SortFunc(recs, func(a, b *record) int {
		return cmp.Or(cmp.Compare(a.Deadline, b.Deadline), cmp.Compare(a.ID, b.ID))
	})
	// Streams whose replica died are charged what they showed by their last
	// checkpoint, with an allowance; anything else its worst cost
	// (checkpoint.go).
	usage, charge, err := c.expiryCharges(ctx, recs, now)
	if err != nil {
		return out, err
	}
	for i, rec := range recs {
		ok, cost, reserved, err := c.close(ctx, now, rec, charge[i], false, 0)
		if err != nil {
			return out, err
		}
		c.forgetCheckpoint(rec.ID)
		c.mu.Lock()
		delete(c.cache, rec.ID)
		if ok {
			c.settledLocked(correction{rec: rec, at: now, cost: cost})
		}
		c.mu.Unlock()
		if ok {
			out = append(out, settlement(rec, now, usage[i], cost, reserved, kernel.StatusExpired))
		}
	}
	if len(recs) > 0 {
		keys := make([]string, len(recs))
		for i, rec := range recs {
			keys[i] = c.checkpointKey(rec.ID)
		}
		_ = c.rdb.Del(ctx, keys...).Err() // best effort: they expire with the records' TTL
	}
	// Forget cached reservations another replica ended.
	c.forgetEnded(ctx, nowN)
	return out, nil
}

// leaseScore is a deadline in microseconds: exact in a ZSET's double score.
func leaseScore(deadlineN int64) int64 { return floorDiv(deadlineN, 1000) }

func unavailable(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("redis: %s: %w", op, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}

func reasonOf(code int64) kernel.Reason {
	switch code {
	case codeExpired:
		return kernel.ReasonKeyExpired
	case codeModel:
		return kernel.ReasonModelNotAllowed
	case codeParallel:
		return kernel.ReasonParallelLimit
	case codeRPM:
		return kernel.ReasonRequestLimit
	case codeTPM:
		return kernel.ReasonTokenLimit
	default:
		return kernel.ReasonBudgetExceeded
	}
}

// softWarnings reads admitLua's (budget ordinal, spent) pairs of the soft
// windows past their limit.
func softWarnings(scopes []kernel.Scope, pairs []any) []kernel.BudgetWarning {
	if len(pairs) < 2 {
		return nil
	}
	out := make([]kernel.BudgetWarning, 0, len(pairs)/2)
	for j := 0; j+1 < len(pairs); j += 2 {
		ord := int(toInt(pairs[j]))
		for _, sc := range scopes {
			if sc.Limits == nil {
				continue
			}
			if ord <= len(sc.Limits.Budgets) {
				b := sc.Limits.Budgets[ord-1]
				out = append(out, kernel.BudgetWarning{Scope: sc.Ref, Period: b.Period, Limit: b.Limit, Spent: kernel.Money(toInt(pairs[j+1]))})
				break
			}
			ord -= len(sc.Limits.Budgets)
		}
	}
	return out
}

// rateInfo picks, for requests and for tokens, the scope with a limit that has
// the fewest remaining, from the counts after the decision (as kernel.State
// does): counts holds the requests of every scope, then their tokens.
func rateInfo(scopes []kernel.Scope, counts []any, left time.Duration) kernel.RateLimitInfo {
	var ri kernel.RateLimitInfo
	haveReq, haveTok := false, false
	n := len(scopes)
	for i := range scopes {
		lim := scopes[i].Limits
		if lim == nil || n+i >= len(counts) {
			continue
		}
		if lim.RPM > 0 {
			rem := max(lim.RPM-toInt(counts[i]), 0)
			if !haveReq || rem < ri.RemainingRequests {
				haveReq = true
				ri.LimitRequests, ri.RemainingRequests, ri.ResetRequests = lim.RPM, rem, left
			}
		}
		if lim.TPM > 0 {
			rem := max(satAdd(lim.TPM, -toInt(counts[n+i])), 0)
			if !haveTok || rem < ri.RemainingTokens {
				haveTok = true
				ri.LimitTokens, ri.RemainingTokens, ri.ResetTokens = lim.TPM, rem, left
			}
		}
	}
	return ri
}
