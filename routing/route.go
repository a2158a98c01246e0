package routing

import (
	"context"
	"errors"
	"slices"
	"time"
)

// One request's routing (docs/internals.md, "Deployment choice"): a Route
// holds where a request stands among its group's deployments and its
// fallback groups', and decides what to try next. It is logic over small
// interfaces — the time (Clock), the groups the request's key may use
// (Groups), the deployments' shared state (Health, the Router) and the
// limiter that admits the request on a deployment (Limiter, the caller's
// accountant with the deployment's rpm/tpm scope added) — so both data
// planes' processors and the tests drive the same code.

// Clock tells a route the time (a processor's clock; a fake in tests).
type Clock interface{ Now() time.Time }

// ClockFunc is a function as a Clock.
type ClockFunc func() time.Time

// Now returns f().
func (f ClockFunc) Now() time.Time { return f() }

// Groups resolves model groups for one request: the group by name when the
// request's key may use it; nil or an error when it may not (the route then
// passes the group by).
type Groups interface {
	Group(ctx context.Context, name string) (*Group, error)
}

// Health is the deployments' state a route reads and feeds, shared by every
// request of a processor: *Router.
type Health interface {
	Order(g *Group, now time.Time) []*Deployment
	Cooling(id string, now time.Time) bool
	Soonest(g *Group, now time.Time) time.Duration
	Start(d *Deployment)
	Finish(d *Deployment, tokens int64)
	Observe(d *Deployment, status int, retryAfter, ttfb time.Duration, now time.Time)
}

// Limiter admits the request on deployment d: the caller's accountant, with
// d's rpm/tpm scope (Deployment.Scope) added to the request's own. full
// reports that d's own scope refused it (the route passes d over); any
// other refusal, or an error, ends the admission.
type Limiter interface {
	AdmitOn(ctx context.Context, d *Deployment) (admitted, full bool, err error)
}

// Env is what a route reads: every field is required.
type Env struct {
	Health Health
	Clock  Clock
	Groups Groups
}

var _ Health = (*Router)(nil)

// Route is the routing state of one request: the groups visited and the
// candidates left, in order. The zero Route is unused; Reset or Pin starts
// one. It is not safe for concurrent use (one request's).
type Route struct {
	Groups  []*Group    // groups visited, first the requested one
	Current *Deployment // the deployment the request is admitted on (nil once done)
	Last    *Deployment // the same, kept after the request is done with it

	cands  []*Deployment // candidates of the current group, next first
	sentAt time.Time     // when the request left for Current (time to first byte)
	tried  int           // deployments passed over at admission (quota full)
	env    Env
	att    *Attempt
	first  [1]*Group      // backing array of Groups (no allocation without fallbacks)
	one    [1]*Deployment // backing array of cands when pinned
}

// UnavailableError is Open's error when every deployment of the group and
// of its fallbacks is cooling down: RetryAfter is the soonest end.
type UnavailableError struct{ RetryAfter time.Duration }

func (e *UnavailableError) Error() string { return "routing: no deployment available" }

// AsUnavailable returns err as an *UnavailableError, or nil.
func AsUnavailable(err error) *UnavailableError {
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return ue
	}
	return nil
}

// noAttempt is the attempt of a route reset without one (a first attempt).
var noAttempt Attempt

// Reset starts r over for a request in group g: att is where the request is
// in its attempts (nil: a first attempt; read, never written).
func (r *Route) Reset(env Env, att *Attempt, g *Group) {
	if att == nil {
		att = &noAttempt
	}
	*r = Route{env: env, att: att}
	r.Groups = append(r.first[:0], g)
}

// Pin starts r over for a request of group g that can go to d only (the
// deployment holding a stored response, or the one an upstream try landed
// on).
func (r *Route) Pin(env Env, att *Attempt, g *Group, d *Deployment) {
	r.Reset(env, att, g)
	r.one[0] = d
	r.cands = r.one[:]
}

// Open finds the request's first deployment: the first in rotation of the
// requested group by its strategy that the attempt has not tried, else of
// the first fallback group with one. A group of one deployment with no
// fallback left has nothing better to offer than that deployment (as
// LiteLLM, which never cools the only deployment down): the provider
// answers. Otherwise the error is an *UnavailableError.
func (r *Route) Open(ctx context.Context) (*Deployment, error) {
	g := r.Groups[0]
	r.cands = r.att.Without(r.env.Health.Order(g, r.env.Clock.Now()))
	if len(r.cands) == 0 && !r.nextGroup(ctx, g.Fallbacks) {
		if len(g.Deployments) == 1 && !r.att.Avoids(g.Deployments[0].Target.Deployment) {
			r.Groups, r.cands = r.Groups[:1], g.Deployments
			return g.Deployments[0], nil
		}
		return nil, &UnavailableError{RetryAfter: r.env.Health.Soonest(g, r.env.Clock.Now())}
	}
	return r.cands[0], nil
}

// nextGroup moves to the first of names (depth first through their own
// fallbacks) with a deployment available; false when there is none.
func (r *Route) nextGroup(ctx context.Context, names []string) bool {
	now := r.env.Clock.Now()
	for _, name := range names {
		if len(r.Groups) > MaxFallbackDepth || slices.ContainsFunc(r.Groups, func(g *Group) bool { return g.Name == name }) {
			continue
		}
		g, err := r.env.Groups.Group(ctx, name)
		if err != nil || g == nil {
			continue
		}
		r.Groups = append(r.Groups, g)
		if c := r.att.Without(r.env.Health.Order(g, now)); len(c) > 0 {
			r.cands = c
			return true
		}
		if r.nextGroup(ctx, g.Fallbacks) {
			return true
		}
	}
	return false
}

// Group is the group the request is routed in now: the last visited (the
// requested one, or the fallback group admission moved to).
func (r *Route) Group() *Group { return r.Groups[len(r.Groups)-1] }

// Next is the candidate the request is to be admitted on.
func (r *Route) Next() *Deployment { return r.cands[0] }

// PassOver moves past the next candidate, whose quota is full this minute:
// to the group's next candidate, then (unless pinned) to the fallback
// groups'. False when none is left.
func (r *Route) PassOver(ctx context.Context, pinned bool) bool {
	r.tried++
	r.cands = r.cands[1:]
	return len(r.cands) > 0 || !pinned && r.nextGroup(ctx, r.Group().Fallbacks)
}

// Admit admits the request through lim on its next candidate, passing over
// each candidate whose own quota is full (PassOver: the group's next, then,
// unless pinned, the fallback groups'). It returns the deployment it was
// admitted on (Admitted), or nil when lim refused it otherwise, failed
// (err), or no candidate was left: the caller keeps lim's last answer.
func (r *Route) Admit(ctx context.Context, pinned bool, lim Limiter) (*Deployment, error) {
	for {
		admitted, full, err := lim.AdmitOn(ctx, r.Next())
		switch {
		case err != nil:
			return nil, err
		case admitted:
			return r.Admitted(), nil
		case !full || !r.PassOver(ctx, pinned):
			return nil, nil
		}
	}
}

// Admitted records that the request was admitted on its next candidate and
// leaves for it now; it returns that deployment.
func (r *Route) Admitted() *Deployment {
	dep := r.cands[0]
	r.Current, r.Last, r.sentAt = dep, dep, r.env.Clock.Now()
	r.env.Health.Start(dep)
	return dep
}

// Observe feeds the deployments' state with the current attempt's response
// status at now (retryAfter: a 429's), timed from sentAt. Nothing when the
// request is on no deployment.
func (r *Route) Observe(status int, retryAfter time.Duration, now time.Time) {
	if r.Current == nil {
		return
	}
	r.env.Health.Observe(r.Current, status, retryAfter, now.Sub(r.sentAt), now)
}

// Done ends the request's use of its deployment (no longer in flight; its
// tokens count for the usage strategy). Nothing when it is on none.
func (r *Route) Done(tokens int64) {
	dep := r.Current
	if dep == nil {
		return
	}
	r.Current = nil
	r.env.Health.Finish(dep, tokens)
}

// FallbackReason says why the request was admitted on a fallback group:
// from is the requested group, why FallbackCooldown (every deployment of
// the groups before was cooling down) or FallbackRateLimited (one's quota
// was full). Both "" on the requested group.
func (r *Route) FallbackReason() (from, why string) {
	if len(r.Groups) < 2 {
		return "", ""
	}
	why = FallbackCooldown
	if r.tried > 0 {
		why = FallbackRateLimited
	}
	return r.Groups[0].Name, why
}
