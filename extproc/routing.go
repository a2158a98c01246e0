package extproc

import (
	"context"
	"errors"
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

// maxFallbackDepth bounds how far fallbacks of fallbacks are followed.
const maxFallbackDepth = 3

// route is the routing state of one request: the candidates left, in order.
type route struct {
	groups  []*routing.Group      // groups visited, first the requested one
	cands   []*routing.Deployment // candidates of the current group, next first
	current *routing.Deployment   // the deployment the request was admitted on
	last    *routing.Deployment   // the same, kept after the request is done with it
	sentAt  time.Time             // when the request left for it (time to first byte)
	tried   int                   // deployments tried at admission (limits full)
	first   [1]*routing.Group     // backing array of groups (no allocation without fallbacks)
}

// resolve finds the request's first deployment: the catalog's choice, or with
// a GroupCatalog the first candidate of the group (or of a fallback group).
func (s *stream) resolve(ctx context.Context, model string) (*translate.Target, error) {
	gc, ok := s.p.cat.(GroupCatalog)
	if !ok {
		return s.p.cat.Resolve(ctx, s.principal, model)
	}
	if s.own.pin != nil { // responses_owner.go: the deployment holding the response
		return s.resolvePinned(ctx, s.own.pin)
	}
	if s.isTry() {
		return s.resolveTry(ctx, gc, model)
	}
	if s.att.Group != "" {
		model = s.att.Group // a retry: the group the failed attempt chose
	}
	g, err := gc.ResolveGroup(ctx, s.principal, model)
	if err != nil || g == nil {
		return nil, err
	}
	s.rtState = route{groups: s.rtState.first[:0]}
	s.rt = &s.rtState
	s.rt.groups = append(s.rt.groups, g)
	s.rt.cands = s.withoutTried(s.p.router.Order(g, s.p.now()))
	if len(s.rt.cands) == 0 && !s.nextGroup(ctx, g.Fallbacks) {
		if len(g.Deployments) == 1 && !s.att.Avoids(g.Deployments[0].Target.Deployment) {
			// A group of one deployment and no fallback left has nothing
			// better to offer than the deployment itself (as LiteLLM, which
			// never cools the only deployment down): the provider answers.
			s.rt.groups, s.rt.cands = s.rt.groups[:1], g.Deployments
			return g.Deployments[0].Target, nil
		}
		return nil, &unavailableError{retryAfter: s.p.router.Soonest(g, s.p.now())}
	}
	return s.rt.cands[0].Target, nil
}

// nextGroup moves to the first fallback group with a deployment available
// (the key must be allowed to use it); false when there is none.
func (s *stream) nextGroup(ctx context.Context, names []string) bool {
	gc := s.p.cat.(GroupCatalog)
	now := s.p.now()
	for _, name := range names {
		if len(s.rt.groups) > maxFallbackDepth || slices.ContainsFunc(s.rt.groups, func(g *routing.Group) bool { return g.Name == name }) {
			continue
		}
		g, err := gc.ResolveGroup(ctx, s.principal, name)
		if err != nil || g == nil {
			continue
		}
		s.rt.groups = append(s.rt.groups, g)
		if c := s.withoutTried(s.p.router.Order(g, now)); len(c) > 0 {
			s.rt.cands = c
			return true
		}
		if s.nextGroup(ctx, g.Fallbacks) {
			return true
		}
	}
	return false
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

// asUnavailable returns err as an *unavailableError, or nil.
func asUnavailable(err error) *unavailableError {
	var ue *unavailableError
	if errors.As(err, &ue) {
		return ue
	}
	return nil
}

// unavailableError: every deployment of the group and its fallbacks is
// cooling down.
type unavailableError struct{ retryAfter time.Duration }

func (e *unavailableError) Error() string { return "extproc: no deployment available" }

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
		dep := s.rt.cands[0]
		t := dep.Target
		areq.Model, areq.Price, areq.DefaultMaxTokens = t.Model, t.Price, t.DefaultMaxTokens
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
				s.rt.current, s.rt.last, s.rt.sentAt = dep, dep, s.p.now()
				s.p.router.Start(dep)
			}
			return d, err
		}
		// This deployment's quota is full this minute: the next one.
		s.rt.tried++
		s.rt.cands = s.rt.cands[1:]
		if len(s.rt.cands) == 0 && (s.pinned() || !s.nextGroup(ctx, s.rt.groups[len(s.rt.groups)-1].Fallbacks)) {
			return d, nil
		}
		next := s.rt.cands[0].Target
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
	if s.rt == nil || s.rt.current == nil {
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
	s.p.router.Observe(s.rt.current, s.status, retryAfter, now.Sub(s.rt.sentAt), now)
	s.tryRetried(s.status)
}

// doneRouting ends the request's use of its deployment (in flight count).
// A stream that ends without response headers is not held against the
// deployment: upstream failures reach the processor as the data plane's
// local 503 (connect failure, reset, timeout), so a missing response means
// the client went away.
func (s *stream) doneRouting(u kernel.Usage) {
	if s.rt == nil || s.rt.current == nil {
		return
	}
	dep := s.rt.current
	s.rt.current = nil
	s.p.router.Finish(dep, u.Total())
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
