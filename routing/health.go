package routing

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Router keeps what the processor learned of each deployment: requests in
// flight, time to first byte (EWMA), recent failures and cooldowns, requests
// and tokens this minute. One Router serves every request of a processor;
// it is safe for concurrent use. Cooldowns are local to the replica unless a
// CooldownShare spreads them (cooldown.go).
type Router struct {
	deps  sync.Map // deployment id → *health
	share CooldownShare

	cooldowns CooldownObserver // SetCooldownObserver
}

// Defaults of a deployment whose policy leaves them zero (the same as the
// store's, documented in docs/admin-api.md); the xDS's outlier detection
// uses them too (CooldownPolicy).
const (
	DefaultCooldown     = 30 * time.Second
	DefaultAllowedFails = 3
	failWindow          = time.Minute
	ewmaWeight          = 0.2 // weight of a new time-to-first-byte sample
)

// CooldownPolicy is a deployment's allowed_fails and cooldown with the
// defaults in place of zero (or negative) values.
func CooldownPolicy(allowedFails int, cooldown time.Duration) (int, time.Duration) {
	if allowedFails <= 0 {
		allowedFails = DefaultAllowedFails
	}
	if cooldown <= 0 {
		cooldown = DefaultCooldown
	}
	return allowedFails, cooldown
}

// NewRouter returns a Router with no history.
func NewRouter() *Router { return &Router{} }

// depHealth is one deployment's state.
type depHealth struct {
	inFlight  atomic.Int64
	ttfb      atomic.Int64  // EWMA, nanoseconds; 0: not measured
	coolUntil atomic.Int64  // Unix nanoseconds; 0 or past: in rotation
	errRate   atomic.Uint64 // float64 bits, EWMA of failed (1) / served (0)

	mu         sync.Mutex
	failStart  time.Time // start of the current failure window
	fails      int
	minute     int64 // Unix minute of reqs/tokens
	reqs, toks int64
}

func (r *Router) health(id string) *depHealth {
	if v, ok := r.deps.Load(id); ok {
		return v.(*depHealth)
	}
	v, _ := r.deps.LoadOrStore(id, new(depHealth))
	return v.(*depHealth)
}

// Cooling reports whether deployment id is out of rotation at now.
func (r *Router) Cooling(id string, now time.Time) bool {
	return r.health(id).coolUntil.Load() > now.UnixNano()
}

// Order returns g's deployments that are in rotation at now, in the order the
// group's strategy prefers them; nil when every one is cooling down.
func (r *Router) Order(g *Group, now time.Time) []*Deployment {
	ds := g.Deployments
	if len(ds) == 1 { // the common case: no copy, no draw
		if r.Cooling(ds[0].Target.Deployment, now) {
			return nil
		}
		return ds
	}
	out := make([]*Deployment, 0, len(ds))
	for _, d := range ds {
		if !r.Cooling(d.Target.Deployment, now) {
			out = append(out, d)
		}
	}
	if len(out) < 2 {
		return out
	}
	// A weighted draw without replacement is the base order of every strategy
	// (it breaks their ties).
	for i := 0; i < len(out)-1; i++ {
		j := i + weightedPick(out[i:])
		out[i], out[j] = out[j], out[i]
	}
	switch g.Strategy {
	case StrategyLeastBusy:
		sortBy(out, func(d *Deployment) int64 { return r.health(d.Target.Deployment).inFlight.Load() })
	case StrategyLatency:
		sortBy(out, func(d *Deployment) int64 { return r.health(d.Target.Deployment).ttfb.Load() })
	case StrategyUsage:
		minute := now.Unix() / 60
		sortBy(out, func(d *Deployment) int64 { return -r.headroom(d, minute) })
	case StrategyWeighted:
	}
	return out
}

// headroom is the share (in millionths) of d's rpm, or else tpm, left this
// minute as this replica counted it; unlimited deployments have all of it.
func (r *Router) headroom(d *Deployment, minute int64) int64 {
	h := r.health(d.Target.Deployment)
	h.mu.Lock()
	reqs, toks := h.reqs, h.toks
	if h.minute != minute {
		reqs, toks = 0, 0
	}
	h.mu.Unlock()
	left := int64(1_000_000)
	if d.RPM > 0 {
		left = min(left, max(d.RPM-reqs, 0)*1_000_000/d.RPM)
	}
	if d.TPM > 0 {
		left = min(left, max(d.TPM-toks, 0)*1_000_000/d.TPM)
	}
	return left
}

// Soonest is when the first deployment of g comes back into rotation,
// from now.
func (r *Router) Soonest(g *Group, now time.Time) time.Duration {
	best := int64(math.MaxInt64)
	for _, d := range g.Deployments {
		best = min(best, r.health(d.Target.Deployment).coolUntil.Load())
	}
	if best == math.MaxInt64 {
		return 0
	}
	return max(time.Duration(best-now.UnixNano()), 0)
}

// Start counts a request on d.
func (r *Router) Start(d *Deployment) { r.health(d.Target.Deployment).inFlight.Add(1) }

// Finish ends a request on d that used tokens.
func (r *Router) Finish(d *Deployment, tokens int64) {
	h := r.health(d.Target.Deployment)
	h.inFlight.Add(-1)
	h.mu.Lock()
	h.toks += tokens
	h.mu.Unlock()
}

// Retryable reports whether an upstream status is the deployment's failure
// (counted towards its cooldown): 408, 429 and 5xx — the data plane's own
// 503 and 504 for a connect failure, reset or timeout included — and 401, the
// provider refusing the deployment's credential (extproc/upstream.go; a 403 may
// be a content-policy refusal, which the status alone does not tell).
func Retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 ||
		status == http.StatusUnauthorized
}

// Observe records an attempt's outcome on d: its status, the
// provider's retry-after on a 429, and the time to its response headers.
func (r *Router) Observe(d *Deployment, status int, retryAfter, ttfb time.Duration, now time.Time) {
	id := d.Target.Deployment
	h := r.health(id)
	failed := Retryable(status)
	if !failed && ttfb > 0 {
		old := h.ttfb.Load()
		v := int64(ttfb)
		if old > 0 {
			v = int64((1-ewmaWeight)*float64(old) + ewmaWeight*float64(ttfb))
		}
		h.ttfb.Store(v)
	}
	sample := 0.0
	if failed {
		sample = 1
	}
	h.errRate.Store(math.Float64bits((1-ewmaWeight)*math.Float64frombits(h.errRate.Load()) + ewmaWeight*sample))

	minute := now.Unix() / 60
	h.mu.Lock()
	if h.minute != minute {
		h.minute, h.reqs, h.toks = minute, 0, 0
	}
	h.reqs++
	var cool time.Duration
	if failed {
		if now.Sub(h.failStart) >= failWindow {
			h.failStart, h.fails = now, 0
		}
		h.fails++
		allowed, cooldown := CooldownPolicy(d.AllowedFails, d.Cooldown)
		switch {
		case status == http.StatusTooManyRequests && retryAfter > 0:
			cool = retryAfter
		case status == http.StatusTooManyRequests || h.fails >= allowed:
			cool = cooldown
		}
		if cool > 0 {
			h.fails = 0
		}
	}
	h.mu.Unlock()
	if cool > 0 {
		r.coolDown(id, now.Add(cool))
		r.cooled(id, status, cool)
	}
}

// coolDown takes deployment id out of rotation until until (a later end
// already set wins), and tells the other replicas.
func (r *Router) coolDown(id string, until time.Time) {
	r.Adopt(id, until)
	if r.share != nil {
		r.share.Publish(id, until)
	}
}

// DeploymentState is the router's view of one deployment (this replica's
// counts; cooldowns include the other replicas' when shared).
type DeploymentState struct {
	CoolingUntil time.Time // zero: in rotation
	ErrorRate    float64   // EWMA of failed attempts (0..1)
	Latency      time.Duration
	InFlight     int64
}

// States returns the state of every deployment the router has seen.
func (r *Router) States(now time.Time) map[string]DeploymentState {
	out := map[string]DeploymentState{}
	r.deps.Range(func(k, v any) bool {
		h := v.(*depHealth)
		st := DeploymentState{
			ErrorRate: math.Float64frombits(h.errRate.Load()),
			Latency:   time.Duration(h.ttfb.Load()),
			InFlight:  h.inFlight.Load(),
		}
		if u := h.coolUntil.Load(); u > now.UnixNano() {
			st.CoolingUntil = time.Unix(0, u)
		}
		out[k.(string)] = st
		return true
	})
	return out
}

// ParseRetryAfter reads a retry-after value: delay seconds or an HTTP date
// (RFC 9110 §10.2.3); 0 when absent or unreadable. It is capped at an hour.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(n * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), time.Hour)
}

// Cooldown reasons (CooldownObserver).
const (
	CooldownAllowedFails = "allowed_fails" // allowed_fails failures within a minute
	CooldownRateLimited  = "rate_limited"  // a 429 (for its retry-after when it has one)
)

// CooldownObserver is told when this replica takes a deployment out of
// rotation (not when it adopts another replica's cooldown): reason is
// CooldownAllowedFails or CooldownRateLimited. It runs on the request's
// goroutine and must not block.
type CooldownObserver interface {
	CooledDown(deployment, reason string, d time.Duration)
}

// SetCooldownObserver makes r report the cooldowns it starts to o. Call it
// before serving.
func (r *Router) SetCooldownObserver(o CooldownObserver) { r.cooldowns = o }

// cooled reports a cooldown r started on deployment id after an attempt
// that ended with status.
func (r *Router) cooled(id string, status int, d time.Duration) {
	if r.cooldowns == nil {
		return
	}
	reason := CooldownAllowedFails
	if status == http.StatusTooManyRequests {
		reason = CooldownRateLimited
	}
	r.cooldowns.CooledDown(id, reason, d)
}
