package extproc

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// Per-try routing (docs/envoy.md, "Retries across deployments"): the
// processor runs at two places of the data plane.
//
//   - The router-level filter's stream authenticates, parses, picks the
//     group's first deployment (cooldowns, strategy, deployment quotas) and
//     admits the request on it, as for any request; but it does not
//     translate. It routes to the per-try route of (group, deployment),
//     whose aggregate cluster lists the deployments to try in order, and
//     hands its reservation to the first try (envoy.ReservedHeader).
//   - The upstream filter's stream, one per try, learns the deployment the
//     try landed on from envoy.TryAttribute. It is an ordinary attempt
//     stream on that deployment: it authenticates again, admits (or, for
//     the first try on the deployment admitted above, adopts that
//     reservation), translates the body for the deployment, and handles the
//     response: a failed try is settled at $0 (the data plane retries it on
//     the next deployment when its retry policy says so), the serving one
//     is translated back and settled at its deployment's price. A try that
//     a strict budget cannot cover is answered with a local reply, which
//     reaches the client (Envoy does not retry an upstream filter's local
//     reply). A try is not refused for its deployment's own state (cooling
//     down, quota full): a refusal would end the request, while the
//     provider's answer (a 429 or 5xx) moves it on to the next deployment;
//     the router-level stream keeps such deployments out of first tries.
//
// Nothing ties the two streams together but the request's headers, so
// they may reach different processors.

// WithPerTry makes the processor route groups that retry per try (the data
// plane has the per-try xDS: xds.Input.Groups). Without it, retries use
// the retry token (retry.go).
func WithPerTry() Option { return func(p *Processor) { p.perTry = true } }

// tryState is a stream's part in per-try routing.
type tryState struct {
	router bool   // the router-level stream of a per-try group
	owned  bool   // router: a try answered the request (it settled)
	dep    string // upstream: the deployment this try landed on
	// upstream: the reservation the router-level stream made, when this
	// try adopts it.
	res     *reserved // the router-level stream's reservation (nil: none)
	retried bool      // a failed try the retry policy retries
	order   int       // deployments in the try order (the chain's)
	origin  tryOrigin // upstream: the request as it arrived (fallback.go)
	// upstream: the signed client header (pertry_client.go), whether it
	// authenticated the try, and how the client sent its key.
	client, beta      string // beta: the client's anthropic-beta
	signed, googleKey bool
}

// reserved is the reservation the router-level stream hands to the first
// try (envoy.ReservedHeader): its id and deployment, the output bound it
// reserved and whether it lowered the client's, and the fallback reason
// that brought it to its group ("" when none).
type reserved struct {
	id, dep, why string
	max          int64
	clamped      bool
}

// isTry reports whether the stream is an upstream try.
func (s *stream) isTry() bool { return s.try != nil && s.try.dep != "" }

// isRouterTry reports whether the stream is the router-level stream of a
// per-try route.
func (s *stream) isRouterTry() bool { return s.try != nil && s.try.router }

// readTryAttribute reads the deployment of an upstream try from the first
// request message's attributes.
func (s *stream) readTryAttribute(req *extprocv3.ProcessingRequest) {
	if len(req.GetAttributes()) == 0 {
		return
	}
	v := req.GetAttributes()["envoy.filters.http.ext_proc"].GetFields()[envoy.TryAttribute]
	if dep := v.GetStringValue(); dep != "" {
		s.try = &tryState{dep: dep}
	}
}

// tryHeader reads the per-try request headers of an upstream try.
func (s *stream) tryHeader(key, v string) {
	if !s.isTry() {
		// The client's anthropic-beta (signed for the tries) and the
		// client header of a fallback redirect's token attempt
		// (pertry_client.go); allocated only when they are sent.
		if (key == hdrClient || key == translate.HdrAnthropicBeta) && v != "" {
			if s.try == nil {
				s.try = &tryState{}
			}
			s.try.setClientHeader(key, v)
		}
		return
	}
	switch key {
	case envoy.AttemptCountHeader:
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= routing.MaxAttempts {
			s.att.N = n
		}
	case hdrClient, translate.HdrAnthropicBeta:
		s.try.setClientHeader(key, v)
	case envoy.ReservedHeader:
		f := strings.Split(v, ";")
		if len(f) != 5 || f[0] == "" {
			return
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return
		}
		s.try.res = &reserved{id: f[0], dep: f[1], max: n, clamped: f[3] == "1", why: f[4]}
	}
}

// tryID names an upstream try: the first try on the deployment the router
// admitted takes the router's reservation and id; the others are
// "ID-N-x" like retries (retry.go).
func (s *stream) tryID() {
	if !s.isTry() || s.try.res == nil {
		return
	}
	if s.att.N <= 1 {
		s.id = s.try.res.id
		return
	}
	s.id = s.try.res.id + "-" + strconv.Itoa(s.att.N) + "-" + s.id[strings.LastIndexByte(s.id, '-')+1:]
}

// adopts reports whether this try takes over the router's reservation.
func (s *stream) adopts() bool {
	return s.isTry() && s.try.res != nil && s.att.N <= 1 && s.try.res.dep == s.try.dep
}

// resolveTry is resolve for an upstream try: the deployment it landed on,
// found in the group the client asked for or in its fallback chain
// (routing.Route.OpenTry).
func (s *stream) resolveTry(ctx context.Context) (*translate.Target, error) {
	d, order, err := s.rt.OpenTry(ctx, s.try.dep)
	s.try.order = order
	if err != nil {
		return nil, err
	}
	return d.Target, nil
}

// adopt is admit for the try that takes over the router's reservation.
func (s *stream) adopt() kernel.Decision {
	s.rt.Admitted()
	return kernel.Decision{Admitted: true, MaxTokens: s.try.res.max, Clamped: s.try.res.clamped}
}

// routeTry ends the router-level stream's request phase: the request goes,
// untranslated, to the per-try route of its group and first deployment,
// with the reservation for the first try. The client's credentials stay:
// each try authenticates them again and removes them.
func (s *stream) routeTry(ctx context.Context, d kernel.Decision) *extprocv3.ProcessingResponse {
	s.rt.Done(0) // in flight on the try, not here
	pr, x := s.newRequestBodyReply()
	x.c.ClearRouteCache = true
	var kvs [3]headerKV
	var vals [512]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(RouteHeader, envoy.TryKey(s.rt.Group().Name, s.target.Deployment, s.rt.TrySkip(ctx, s.target.Deployment)))
	clamped := "0"
	if d.Clamped {
		clamped = "1"
	}
	_, why := s.rt.FallbackReason()
	l = l.add(envoy.ReservedHeader, s.id+";"+s.target.Deployment+";"+strconv.FormatInt(d.MaxTokens, 10)+";"+clamped+";"+why)
	if c := s.signedClient(); c != "" {
		l = l.add(hdrClient, c)
	}
	x.setHeaders(l)
	x.hm.RemoveHeaders = routerRemoved
	s.mark(&s.report.Forwarded)
	return pr
}

// routerRemoved: a client's retry token and client header never reach a
// try (the reservation header and a signed client header are overwritten;
// Envoy removes a client's x-envoy-* headers at the edge, and ext_proc may
// not touch them).
var routerRemoved = []string{hdrRetry, hdrClient}

// tryResponse is the router-level stream's response headers: a try's
// response (it carries the attempts header a try sets) was handled by that
// try, which settled it; anything else (the data plane's own reply: no
// host, overflow) ends the reservation here.
func (s *stream) tryResponse(h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	for _, hv := range h.GetHeaders().GetHeaders() {
		if hv.GetKey() == hdrAttempts {
			s.try.owned, s.settled, s.admitted = true, true, false
			pr, _ := s.newResponseHeadersReply()
			pr.ModeOverride = modeBodyNone
			return pr
		}
	}
	return nil
}

// modeBodyNone stops the response body from reaching the router-level
// stream once a try handles the response (shared: read-only).
var modeBodyNone = &extprocfilterv3.ProcessingMode{
	RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
	ResponseBodyMode: extprocfilterv3.ProcessingMode_NONE,
}

// routesPerTry reports whether this (router-level) stream routes per try:
// the processor does, the request is a first attempt, and the group it was
// admitted in retries elsewhere (routing.PerTry, as the xDS emits it).
func (s *stream) routesPerTry() bool {
	if !s.p.perTry || s.rt == nil || s.isTry() || s.att.N != 0 || s.pinned() {
		return false
	}
	if !s.rt.Group().PerTry() {
		return false
	}
	beta := s.clientBeta()
	s.try = &tryState{router: true, beta: beta}
	return true
}

// tryRetried records whether the data plane's retry policy retries this
// failed try (Report.Retried): a status it retries, a retry left in the
// requested group's budget (the route's num_retries) and a deployment left
// in the try order.
func (s *stream) tryRetried(status int) {
	if !s.isTry() || s.rt == nil {
		return
	}
	s.try.retried = s.rt.TryRetried(s.att.Number(), s.try.order, status)
}

// tryFallbackReason is a try's Report.FallbackReason on a fallback group:
// a retry moved there because the tries before it failed; a first try
// went there for the router-level stream's reason.
func (s *stream) tryFallbackReason(r *Report) {
	if !s.isTry() || r.FallbackFrom == "" {
		return
	}
	if s.att.N > 1 {
		r.FallbackReason = routing.FallbackFailed
	} else if s.try.res != nil && s.try.res.why != "" {
		r.FallbackReason = s.try.res.why
	}
}

// tryEndedUnanswered records a try whose stream ended with no response: the
// data plane ended it (connect failure, reset, per-try timeout; upstream
// filters do not see the router's own replies) and it counts as the data
// plane's 503 for cooldowns and retries, unless the stream was cancelled
// (the client went away: not held against the deployment).
func (s *stream) tryEndedUnanswered(ctx context.Context) {
	s.status = http.StatusServiceUnavailable
	if ctx.Err() != nil || s.rt == nil || s.rt.Current == nil {
		return
	}
	s.rt.Observe(s.status, 0, s.p.now())
	s.tryRetried(s.status)
}
