package extproc

import (
	"context"
	"slices"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// Routing: the choice of a deployment among a model group's, shared by both
// data planes (docs/internals.md, "Routing"). A catalog that implements
// GroupCatalog hands the processor whole model groups; the processor then
// skips deployments that are cooling down, orders the rest by the group's
// strategy, admits the request with the deployment's own rpm/tpm scope (the
// provider's quota, counted like every other limit, across replicas when
// the counters are shared) and moves to the next deployment when that scope
// is full. A group with no deployment left hands over to its fallback groups,
// in order. Responses feed the Router (routing/health.go): failures cool a
// deployment down, times to first byte feed the latency strategy.

// ScopeDeployment is the kernel scope a deployment's rpm/tpm are counted in.
const ScopeDeployment = kernel.ScopeDeployment

// GroupCatalog is implemented by a Catalog that routes by model group; the
// processor then uses ResolveGroup instead of Resolve.
type GroupCatalog interface {
	// ResolveGroup returns the named group for this key: ErrModelNotFound or
	// ErrModelNotAllowed when it cannot.
	ResolveGroup(ctx context.Context, p *Principal, model string) (*routing.Group, error)
}

// streamGroups resolves groups for a stream's key (routing.Groups).
type streamGroups stream

// Group is the catalog's group name for the stream's key.
func (g *streamGroups) Group(ctx context.Context, name string) (*routing.Group, error) {
	return g.p.cat.(GroupCatalog).ResolveGroup(ctx, g.principal, name)
}

// routeEnv is what the stream's route reads: the processor's router and
// clock, the groups the stream's key may use.
func (s *stream) routeEnv() routing.Env {
	return routing.Env{Health: s.p.router, Clock: routing.ClockFunc(s.p.now), Groups: (*streamGroups)(s)}
}

// routeTo routes the request in group g to dep alone (a stored response's
// deployment).
func (s *stream) routeTo(g *routing.Group, dep *routing.Deployment) {
	s.rtState.Pin(s.routeEnv(), &s.att, g, dep)
	s.rt = &s.rtState
}

// resolve finds the request's first deployment: the catalog's choice, or with
// a GroupCatalog the first candidate of the group (or of a fallback group,
// routing.Route.Open).
func (s *stream) resolve(ctx context.Context, model string) (*translate.Target, error) {
	gc, ok := s.p.cat.(GroupCatalog)
	if !ok {
		return s.p.cat.Resolve(ctx, s.principal, model)
	}
	if s.own.pin != nil { // responses_owner.go: the deployment holding the response
		return s.resolvePinned(ctx, s.own.pin)
	}
	if s.att.Group != "" && !s.isTry() {
		model = s.att.Group // a retry: the group the failed attempt chose
	}
	g, err := gc.ResolveGroup(ctx, s.principal, model)
	if err != nil || g == nil {
		return nil, err
	}
	s.rtState.Reset(s.routeEnv(), &s.att, g)
	s.rt = &s.rtState
	if s.isTry() {
		return s.resolveTry(ctx)
	}
	d, err := s.rt.Open(ctx)
	if err != nil {
		return nil, err
	}
	return d.Target, nil
}

// hdrDeployment names, on the reply, the deployment that served it.
const hdrDeployment = "x-tollgate-deployment"

// refused maps a refused admission: a deployment's full quota (every
// candidate's, since admit moves on while one is left) is the model's 429.
func (s *stream) refused(d kernel.Decision, model string) *translate.APIError {
	if d.Scope.Kind == kernel.ScopeDeployment {
		return unavailableReply(model, &d, 0)
	}
	return decisionError(d, model)
}

// admit admits areq on the current candidate, adding its rpm/tpm scope; when
// that scope is full it moves to the next candidate (then the fallback
// groups) and admits again, re-priced. It sets s.target and s.tr to where
// the request goes.
func (s *stream) admit(ctx context.Context, areq *kernel.AdmitRequest) (kernel.Decision, error) {
	if s.rt == nil {
		return s.p.acct.Admit(ctx, areq)
	}
	if s.adopts() {
		return s.adopt(), nil
	}
	base := areq.Scopes
	for {
		dep := s.rt.Next()
		t := dep.Target
		areq.Model, areq.Price, areq.DefaultMaxTokens = t.Model, t.Price, t.DefaultMaxTokens
		s.priceUnits(areq) // units.go
		areq.Scopes = base
		if dep.Scope.Limits != nil {
			areq.Scopes = append(slices.Clip(base), dep.Scope)
		}
		d, err := s.p.acct.Admit(ctx, areq)
		if err == nil && !d.Admitted && d.Scope.Kind == kernel.ScopeDeployment && s.isTry() {
			// A try is not refused for its deployment's quota (pertry.go):
			// the provider answers, a 429 moves the request on.
			areq.Scopes = base
			d, err = s.p.acct.Admit(ctx, areq)
		}
		if err != nil || d.Admitted || d.Scope.Kind != kernel.ScopeDeployment {
			if err == nil && d.Admitted {
				s.rt.Admitted()
			}
			return d, err
		}
		// This deployment's quota is full this minute: the next one.
		if !s.rt.PassOver(ctx, s.pinned()) {
			return d, nil
		}
		next := s.rt.Next().Target
		if next.Provider != t.Provider {
			tr := translate.NewTranslator(s.ep.API, next.Provider)
			if tr == nil {
				return d, nil
			}
			s.tr = tr
		}
		s.target = next
	}
}

// observeResponse feeds the router with the current attempt's response
// status (its headers h, read only for a 429's retry-after).
func (s *stream) observeResponse(h *extprocv3.HttpHeaders) {
	if s.rt == nil || s.rt.Current == nil {
		return
	}
	now := s.report.FirstByte // read for the report with :status, this same message
	if now.IsZero() {
		now = s.p.now()
	}
	var retryAfter time.Duration
	if s.status == 429 {
		for _, hv := range h.GetHeaders().GetHeaders() {
			if hv.GetKey() == hdrRetryAfter {
				retryAfter = routing.ParseRetryAfter(headerValue(hv), now)
			}
		}
		s.upRetryAfter = retryAfter
	}
	s.rt.Observe(s.status, retryAfter, now)
	s.tryRetried(s.status)
}

// doneRouting ends the request's use of its deployment (in flight count).
// A stream that ends without response headers is not held against the
// deployment: upstream failures reach the processor as the data plane's
// local 503 (connect failure, reset, timeout), so a missing response means
// the client went away.
func (s *stream) doneRouting(u kernel.Usage) {
	if s.rt == nil {
		return
	}
	s.rt.Done(u.Total())
}

// unavailableReply is the client error when no deployment can take the
// request: 429 when every one is at its rpm/tpm quota, 503 when they are
// cooling down (retry-after: the soonest end).
func unavailableReply(model string, d *kernel.Decision, retryAfter time.Duration) *translate.APIError {
	if d != nil {
		e := &translate.APIError{
			Status: 429, Type: "requests", Code: translate.CodeRateLimit,
			Message: "Rate limit reached for every deployment of the model `" + model + "`: the providers' quotas are used up for this minute.",
		}
		e.Headers = retryAfterHeaders(d.RetryAfter)
		return e
	}
	e := errUnavailable()
	e.Message = "No deployment of the model `" + model + "` is available right now: every one is cooling down after failures."
	e.Headers = retryAfterHeaders(retryAfter)
	return e
}
