package extproc

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
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
// the retry token (routing.go).
func WithPerTry() Option { return func(p *Processor) { p.perTry = true } }

// isTry reports whether the stream is an upstream try.
func (s *stream) isTry() bool { return s.try != nil && s.try.Dep != "" }

// isRouterTry reports whether the stream is the router-level stream of a
// per-try route.
func (s *stream) isRouterTry() bool { return s.try != nil && s.try.Router }

// readTryAttribute reads the deployment of an upstream try from the first
// request message's attributes.
func (s *stream) readTryAttribute(req *extprocv3.ProcessingRequest) {
	if len(req.GetAttributes()) == 0 {
		return
	}
	v := req.GetAttributes()["envoy.filters.http.ext_proc"].GetFields()[envoy.TryAttribute]
	if dep := v.GetStringValue(); dep != "" {
		s.try = &routing.Try{Dep: dep}
	}
}

// tryHeader reads the per-try request headers of an upstream try.
func (s *stream) tryHeader(key, v string) {
	if !s.isTry() {
		// The client's anthropic-beta (signed for the tries) and the
		// client header of a fallback redirect's token attempt
		// (pertry.go); allocated only when they are sent.
		if (key == hdrClient || key == translate.HdrAnthropicBeta) && v != "" {
			if s.try == nil {
				s.try = &routing.Try{}
			}
			setClientHeader(s.try, key, v)
		}
		return
	}
	switch key {
	case envoy.AttemptCountHeader:
		if n, err := strconv.Atoi(v); err == nil && n > 0 && n <= routing.MaxAttempts {
			s.att.N = n
		}
	case hdrClient, translate.HdrAnthropicBeta:
		setClientHeader(s.try, key, v)
	case envoy.ReservedHeader:
		if r := routing.ParseReserved(v); r != nil {
			s.try.Res = r
		}
	}
}

// tryID names an upstream try: the first try on the deployment the router
// admitted takes the router's reservation and id; the others are
// "ID-N-x" like retries (routing.go).
func (s *stream) tryID() {
	if !s.isTry() || s.try.Res == nil {
		return
	}
	if s.att.N <= 1 {
		s.id = s.try.Res.ID
		return
	}
	s.id = s.try.Res.ID + "-" + strconv.Itoa(s.att.N) + "-" + s.id[strings.LastIndexByte(s.id, '-')+1:]
}

// adopts reports whether this try takes over the router's reservation.
func (s *stream) adopts() bool {
	return s.isTry() && s.try.Res != nil && s.att.N <= 1 && s.try.Res.Dep == s.try.Dep
}

// resolveTry is resolve for an upstream try: the deployment it landed on,
// found in the group the client asked for or in its fallback chain
// (routing.Route.OpenTry).
func (s *stream) resolveTry(ctx context.Context) (*translate.Target, error) {
	d, order, err := s.rt.OpenTry(ctx, s.try.Dep)
	s.try.Order = order
	if err != nil {
		return nil, err
	}
	return d.Target, nil
}

// adopt is admit for the try that takes over the router's reservation.
func (s *stream) adopt() kernel.Decision {
	s.rt.Admitted()
	return kernel.Decision{Admitted: true, MaxTokens: s.try.Res.Max, Clamped: s.try.Res.Clamped}
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
	_, why := s.rt.FallbackReason()
	res := routing.Reserved{ID: s.id, Dep: s.target.Deployment, Max: d.MaxTokens, Clamped: d.Clamped, Why: why}
	l = l.add(envoy.ReservedHeader, res.Header())
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
			s.try.Owned, s.settled, s.admitted = true, true, false
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
	if !s.p.perTry || s.rt == nil || s.isTry() || s.att.N != 0 || s.own.Pinned() {
		return false
	}
	if !s.rt.Group().PerTry() {
		return false
	}
	beta := s.clientBeta()
	s.try = &routing.Try{Router: true, Beta: beta}
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
	s.try.Retried = s.rt.TryRetried(s.att.Number(), s.try.Order, status)
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
	} else if s.try.Res != nil && s.try.Res.Why != "" {
		r.FallbackReason = s.try.Res.Why
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

// The signed client header of per-try routing (docs/envoy.md, "Retries
// across deployments"). Envoy runs upstream filters on the router's own
// request header map (UpstreamRequest::acceptHeadersFromRouter) and does
// not restore it on a retry (Filter::doRetry copies the body, not the
// headers), so a try after the first sees the previous try's changes: the
// provider's credential instead of the client's key, the translated :path,
// provider headers. The router-level stream therefore writes hdrClient
// (always: a client's own is removed first) with what a try needs of the
// client's request (routing.ClientFields), signed with the key that signs
// retry tokens (routing.SignClient). The try then looks the key up by id
// (KeyLookup), so a key revoked or expired since is refused. A try
// authenticates from a valid header; without one (a router-level stream of
// an older processor, a catalog without KeyLookup) it authenticates the
// client's credential as before; an invalid or expired one is a 401.

// hdrClient carries the signed client header.
const hdrClient = "x-tollgate-client"

// KeyLookup is the optional part of a Catalog that per-try routing's signed
// client header needs. Without it tries authenticate the client's
// credential, which on Envoy only the first try still has.
type KeyLookup interface {
	// KeyByID returns the principal of the key with id when one of its
	// secrets is valid now; ErrUnauthorized when the key is unknown,
	// expired or revoked.
	KeyByID(ctx context.Context, id string) (*Principal, error)
}

// signedClient is the router-level stream's hdrClient value ("" when the
// catalog cannot sign: tries then authenticate the client's credential).
func (s *stream) signedClient() string {
	if _, ok := s.p.cat.(KeyLookup); !ok || s.principal == nil || s.principal.KeyID == "" {
		return ""
	}
	return routing.SignClient(s.p.retryKey, routing.ClientFields{
		KeyID: s.principal.KeyID, Expires: s.p.now().Add(routing.ClientHeaderTTL).Unix(),
		Path: s.path, Customer: s.customerHdr, Version: s.anthropicVersion, Beta: s.clientBeta(),
		Traceparent: s.report.ClientTraceparent, GoogleKey: s.googleKey,
	})
}

// readTryClient authenticates an upstream try from its signed client
// header, when it has one and the catalog can check it: the principal,
// the client's :path (*path) and the client's values of the headers a
// previous try may have changed. It returns the refusal of an invalid one.
//
// The request a try's fallback redirect recreates comes back to the
// router-level filter with the try's header map: after a retry that holds
// a provider's credential, so a token attempt (its token is the
// processor's own) also authenticates from the signed header it carries.
func (s *stream) readTryClient(ctx context.Context, path **corev3.HeaderValue) *translate.APIError {
	if s.try == nil || s.try.Client == "" || !s.isTry() && s.att.N <= 1 {
		return nil
	}
	kl, ok := s.p.cat.(KeyLookup)
	if !ok {
		return nil
	}
	f, ok := routing.ParseClient(s.p.retryKey, s.try.Client, s.p.now())
	if !ok {
		return translate.ErrClientHeader()
	}
	pr, err := kl.KeyByID(ctx, f.KeyID)
	if err != nil || pr == nil {
		return translate.ErrClientHeader()
	}
	s.principal, s.try.Signed = pr, true
	*path = &corev3.HeaderValue{Key: ":path", RawValue: []byte(f.Path)}
	s.customerHdr, s.anthropicVersion, s.try.Beta = f.Customer, f.Version, f.Beta
	s.report.ClientTraceparent = f.Traceparent
	s.try.GoogleKey = f.GoogleKey
	return nil
}

// authenticate is Catalog.Authenticate, or the principal a try's signed
// client header gave.
func (s *stream) authenticate(ctx context.Context, secret string) (*Principal, error) {
	if s.signedTry() {
		s.googleKey = s.try.GoogleKey
		return s.principal, nil
	}
	return s.p.cat.Authenticate(ctx, secret)
}

// signedTry reports whether a signed client header authenticated this try
// (or token attempt).
func (s *stream) signedTry() bool { return s.try != nil && s.try.Signed }

// providerHeaders are every header a try may set for any provider kind
// (the translators' credentials and versions, the signers', the tracer's):
// a try removes them all before setting its own, since the header map it
// starts from may hold a previous try's (Envoy).
var providerHeaders = []string{
	translate.HdrAuthorization, translate.HdrXAPIKey, translate.HdrAPIKey, translate.HdrGoogAPIKey,
	translate.HdrAnthropicVersion, translate.HdrAnthropicBeta, hdrTraceparent,
	"x-amz-date", "x-amz-security-token", "x-amz-content-sha256",
}

// tryRequestHeaders makes an upstream try's request headers from scratch:
// every provider header removed, the client's :path (unless the translator
// set one), the client's anthropic-version, anthropic-beta and traceparent
// back unless the translator set or removed them, then the try's own (l).
// The request a try's fallback redirect recreates (a token attempt on a
// plain route) starts from the try's map too, and also loses the per-try
// headers (a try keeps them for the next try).
func (s *stream) tryRequestHeaders(l headerList, out *translate.Outbound, remove []string) (headerList, []string) {
	remove = append(slices.Clip(remove), providerHeaders...)
	if !s.isTry() {
		remove = append(remove, envoy.ReservedHeader, hdrClient)
	}
	if out.Path == "" || out.Path == s.path {
		l = l.add(":path", s.path)
	}
	for _, kv := range [...][2]string{
		{translate.HdrAnthropicVersion, s.anthropicVersion},
		{translate.HdrAnthropicBeta, s.clientBeta()},
		{hdrTraceparent, s.report.ClientTraceparent},
	} {
		if kv[1] != "" && !l.has(kv[0]) && !slices.Contains(out.Remove, kv[0]) {
			l = l.add(kv[0], kv[1])
		}
	}
	return l, remove
}

// has reports whether l sets key.
func (l headerList) has(key string) bool {
	return slices.ContainsFunc(l.kv, func(kv headerKV) bool { return kv.key == key })
}

// setClientHeader keeps the client header or the client's anthropic-beta.
func setClientHeader(t *routing.Try, key, v string) {
	if key == hdrClient {
		t.Client = v
	} else {
		t.Beta = v
	}
}

// clientBeta is the client's anthropic-beta ("" for none).
func (s *stream) clientBeta() string {
	if s.try == nil {
		return ""
	}
	return s.try.Beta
}
