package extproc

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/envoy"
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
	if o := s.own.Pin(); o != nil { // responses.go: the deployment holding the response
		return s.p.resp.ResolvePinned(ctx, (*ownStream)(s), o)
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
		return translate.ErrNoDeployment(model, &d, 0)
	}
	return translate.ErrDecision(d, model)
}

// admit admits the request (s.areq) on the current candidate, adding its
// rpm/tpm scope; when that scope is full the route moves to the next
// candidate (then the fallback groups) and admits again, re-priced
// (routing.Route.Admit). It sets s.target and s.tr to where the request goes.
func (s *stream) admit(ctx context.Context) (kernel.Decision, error) {
	if s.rt == nil {
		return s.p.acct.Admit(ctx, &s.areq)
	}
	if s.adopts() {
		return s.adopt(), nil
	}
	_, err := s.rt.Admit(ctx, s.own.Pinned(), (*streamLimiter)(s))
	return s.decision, err
}

// streamLimiter admits a stream's request (s.areq) on a deployment
// (routing.Limiter): re-priced at the deployment's price, with its scope
// added to the request's own; a refused candidate's scopes are put back, an
// admitted one's kept (a background response's hold reads them). The last
// decision is s.decision.
type streamLimiter stream

func (l *streamLimiter) AdmitOn(ctx context.Context, dep *routing.Deployment) (admitted, full bool, err error) {
	s := (*stream)(l)
	areq, t := &s.areq, dep.Target
	base := areq.Scopes // the request's own: no deployment's
	if t.Provider != s.target.Provider {
		// Passed over to another provider's deployment: its translator.
		tr := translate.NewTranslator(s.ep.API, t.Provider)
		if tr == nil {
			return false, false, nil // the last refusal stands
		}
		s.tr = tr
	}
	s.target = t
	areq.Model, areq.Price, areq.DefaultMaxTokens = t.Model, t.Price, t.DefaultMaxTokens
	s.priceUnits(areq) // units.go
	if dep.Scope.Limits != nil {
		areq.Scopes = append(slices.Clip(base), dep.Scope)
	}
	s.decision, err = s.p.acct.Admit(ctx, areq)
	if err == nil && !s.decision.Admitted && s.decision.Scope.Kind == kernel.ScopeDeployment && s.isTry() {
		// A try is not refused for its deployment's quota (pertry.go):
		// the provider answers, a 429 moves the request on.
		areq.Scopes = base
		s.decision, err = s.p.acct.Admit(ctx, areq)
	}
	if err != nil {
		return false, false, err
	}
	if !s.decision.Admitted {
		areq.Scopes = base
	}
	return s.decision.Admitted, !s.decision.Admitted && s.decision.Scope.Kind == kernel.ScopeDeployment, nil
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
			if hv.GetKey() == translate.HdrRetryAfter {
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

// Retrying a failed attempt on another deployment (docs/envoy.md, "Retries").
//
// Every attempt is one ext_proc stream, one admission and one settlement:
// the failed attempt is settled like any failed request (the provider did
// not bill it: a $0 ledger row with its deployment and status), and the next
// attempt is admitted afresh on the deployment it lands on, so it is priced
// at that deployment's price and a strict budget that cannot cover its worst
// case refuses it. Settlement stays exactly once per reservation.
//
// The processor decides everything, by routing.Route.Retry: whether the
// failure is retried (429, 500, 502, 503, 504 — the data plane's local
// 503/504 for a connect failure, a reset before the response or a per-try
// timeout included — or a context-window / content-policy refusal when the
// group names fallbacks for it), how long to wait (exponential backoff with
// jitter, at least the provider's retry-after up to routing.MaxRetryWait)
// and that another deployment is left. It answers the failed attempt's
// response with two headers: RetryHeader, an opaque signed token (attempt
// number, attempts allowed, the group to route in, the deployments already
// tried, the first attempt's id), and RetryDelayHeader (milliseconds). A
// data plane that retries drops that response, waits, and sends the client's
// request again through the filter with the token as a request header; the
// new stream routes avoiding the deployments tried. Only a response whose
// headers have not gone downstream can be retried, so a stream is retried
// only before its first byte.
//
// With per-try routing (WithPerTry, pertry.go) the data plane's retry policy
// retries the first kind and the router-level stream never answers with the
// token (no data plane sends a request again once its response reached that
// filter); the token is then carried only by a try's fallback redirect for
// a context-window or content-policy refusal (routing.go).

// Retry headers (names shared with the data planes).
const (
	hdrRetry      = envoy.RetryHeader
	hdrRetryDelay = envoy.RetryDelayHeader
	hdrAttempts   = "x-tollgate-attempts"
)

// retryHeader reads the request's retry token (request headers). A gateway
// gives its replicas one shared key (WithTokenKey, from the store); a
// processor without one signs with a random key (routing.NewTokenKey), and a
// token from another processor is then ignored (routed as a first attempt).
func (s *stream) retryHeader(v string) {
	s.att = routing.ParseToken(s.p.retryKey, v)
	if s.att.N > 1 {
		// The first attempt's id, the attempt number, and this stream's own
		// id's last part: unique even when a token is replayed (the ledger
		// keeps one row per id).
		s.id = s.att.Orig + "-" + strconv.Itoa(s.att.N) + "-" + s.id[strings.LastIndexByte(s.id, '-')+1:]
		s.report.Attempts = s.att.N - 1 // traceHeader counts this one
	}
}

// retryAfterFailure decides whether the failed attempt (its status and
// error body) is retried (routing.Route.Retry), and returns the reply
// headers saying so (nil: not retried).
func (s *stream) retryAfterFailure(ctx context.Context, status int, body []byte) [][2]string {
	if s.rt == nil || s.isRouterTry() || s.own.Pinned() {
		return nil
	}
	mode := routing.RetryToken
	if s.isTry() {
		// Per-try routing: the data plane's retry policy retries the
		// failures it can tell; the context-window and content-policy
		// fallbacks are the try's fallback redirect (routing.go).
		mode = routing.RetryRedirect
	} else if s.p.perTry {
		// With per-try routing the router-level stream never retries: a
		// data plane cannot send a request again once its response reached
		// the router-level filter (Envoy does not), so neither does the
		// built-in one. Its request is a plain group's or a token attempt's.
		return nil
	}
	next, delay, ok := s.rt.Retry(ctx, mode, status, body, s.upRetryAfter)
	if !ok {
		return nil
	}
	if next.Orig == "" {
		next.Orig = s.id
		if s.isTry() && s.try.Res != nil {
			next.Orig = s.try.Res.ID // the request's id, not this try's
		}
	}
	token := routing.SignToken(s.p.retryKey, next.Payload())
	if s.isTry() {
		return s.try.Origin.Redirect(s.path, token)
	}
	return [][2]string{
		{hdrRetry, token},
		{hdrRetryDelay, strconv.FormatInt(delay.Milliseconds(), 10)},
	}
}

// readTryOrigin keeps the URL parts and the copied headers of an upstream
// try's request (the path is s.path) for a context-window or
// content-policy fallback's redirect (routing.TryOrigin.Redirect).
func (s *stream) readTryOrigin(h *corev3.HeaderMap) {
	if !s.isTry() {
		return
	}
	o := &s.try.Origin
	// A retry's map holds the previous try's values of the copied headers
	// (a provider's credential): the redirect then removes them, and the
	// token attempt authenticates from the signed client header, which
	// stays in the map (pertry.go).
	later := s.try.Signed && s.att.N > 1
	for _, hv := range h.GetHeaders() {
		switch k := hv.GetKey(); {
		case k == ":scheme":
			o.Scheme = headerValue(hv)
		case k == ":authority":
			o.Authority = headerValue(hv)
		case !later && k != hdrRetry && slices.Contains(envoy.FallbackCopiedHeaders, k):
			o.Copied = append(o.Copied, [2]string{k, headerValue(hv)})
		}
	}
	if later {
		for _, kv := range [...][2]string{{hdrCustomer, s.customerHdr}, {translate.HdrAnthropicVersion, s.anthropicVersion}} {
			if kv[1] != "" {
				o.Copied = append(o.Copied, kv)
			}
		}
	}
}

// redirectRemoved is what a try removes from its response headers: a
// provider's own redirect with the fallback status loses its location, so
// only the processor's redirect is followed (the provider's goes to the
// client as it is, unfollowed).
func (s *stream) redirectRemoved() []string {
	if s.isTry() && s.status == envoy.FallbackRedirectStatus {
		return locationHeader
	}
	return nil
}

// locationHeader is a RemoveHeaders list (shared: read-only).
var locationHeader = []string{"location"}
