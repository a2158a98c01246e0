package extproc

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

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
	origin  tryOrigin // upstream: the request as it arrived (routing.go)
	// upstream: the signed client header (pertry.go), whether it
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
		// (pertry.go); allocated only when they are sent.
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
// "ID-N-x" like retries (routing.go).
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

// The signed client header of per-try routing (docs/envoy.md, "Retries
// across deployments"). Envoy runs upstream filters on the router's own
// request header map (UpstreamRequest::acceptHeadersFromRouter) and does
// not restore it on a retry (Filter::doRetry copies the body, not the
// headers), so a try after the first sees the previous try's changes: the
// provider's credential instead of the client's key, the translated :path,
// provider headers. The router-level stream therefore writes hdrClient
// (always: a client's own is removed first) with what a try needs of the
// client's request:
//
//	base64url(key id NUL expiry NUL path NUL customer NUL anthropic-version
//	          NUL anthropic-beta NUL traceparent NUL flags) "." base64url(mac)
//
// mac is HMAC-SHA256 over the payload keyed by the key that signs retry
// tokens (routing.go): every replica on one store shares it (WithTokenKey),
// a client at the data plane or an attacker at the ext_proc port does not
// have it. The try then looks the key up by id (KeyLookup), so a key
// revoked or expired since is refused. The path loses
// a ?key= (the client's Gemini key): the header reaches the provider, to
// which it is opaque. A try authenticates from a valid header; without one
// (a router-level stream of an older processor, a catalog without
// KeyLookup) it authenticates the client's credential as before; an
// invalid or expired one is a 401.

// hdrClient carries the signed client header.
const hdrClient = "x-tollgate-client"

// clientHeaderTTL bounds how long a signed client header is honoured: a
// retry comes within the route's timeout (10 minutes by default).
const clientHeaderTTL = time.Hour

// KeyLookup is the optional part of a Catalog that per-try routing's signed
// client header needs. Without it tries authenticate the client's
// credential, which on Envoy only the first try still has.
type KeyLookup interface {
	// KeyByID returns the principal of the key with id when one of its
	// secrets is valid now; ErrUnauthorized when the key is unknown,
	// expired or revoked.
	KeyByID(ctx context.Context, id string) (*Principal, error)
}

// clientFields are the client's request values a signed header carries.
type clientFields struct {
	keyID, path, customer, version, beta, traceparent string
	expires                                           int64
	googleKey                                         bool
}

// nClientFields is the number of fields of a signed client header.
const nClientFields = 8

// signedClient is the router-level stream's hdrClient value ("" when the
// catalog cannot sign: tries then authenticate the client's credential).
func (s *stream) signedClient() string {
	if _, ok := s.p.cat.(KeyLookup); !ok || s.principal == nil || s.principal.KeyID == "" {
		return ""
	}
	flags := ""
	if s.googleKey {
		flags = "g"
	}
	payload := strings.Join([]string{
		s.principal.KeyID, strconv.FormatInt(s.p.now().Add(clientHeaderTTL).Unix(), 10),
		withoutQueryKey(s.path), s.customerHdr, s.anthropicVersion, s.clientBeta(),
		s.report.ClientTraceparent, flags,
	}, "\x00")
	return base64.RawURLEncoding.EncodeToString([]byte(payload)) + "." + clientMAC(s.p.retryKey, payload)
}

// clientMAC signs a client header's payload with key.
func clientMAC(key []byte, payload string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
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
	if s.try == nil || s.try.client == "" || !s.isTry() && s.att.N <= 1 {
		return nil
	}
	kl, ok := s.p.cat.(KeyLookup)
	if !ok {
		return nil
	}
	f, payload, mac, ok := parseClientHeader(s.try.client)
	if !ok || f.expires < s.p.now().Unix() || !hmac.Equal([]byte(clientMAC(s.p.retryKey, payload)), []byte(mac)) {
		return errClientHeader()
	}
	pr, err := kl.KeyByID(ctx, f.keyID)
	if err != nil || pr == nil {
		return errClientHeader()
	}
	s.principal, s.try.signed = pr, true
	*path = &corev3.HeaderValue{Key: ":path", RawValue: []byte(f.path)}
	s.customerHdr, s.anthropicVersion, s.try.beta = f.customer, f.version, f.beta
	s.report.ClientTraceparent = f.traceparent
	s.try.googleKey = f.googleKey
	return nil
}

// parseClientHeader splits a signed client header into its fields, its
// payload and its mac.
func parseClientHeader(v string) (f clientFields, payload, mac string, ok bool) {
	enc, mac, found := strings.Cut(v, ".")
	if !found || mac == "" {
		return f, "", "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return f, "", "", false
	}
	payload = string(raw)
	p := strings.Split(payload, "\x00")
	if len(p) != nClientFields || p[0] == "" || !strings.HasPrefix(p[2], "/") {
		return f, "", "", false
	}
	exp, err := strconv.ParseInt(p[1], 10, 64)
	if err != nil {
		return f, "", "", false
	}
	f = clientFields{
		keyID: p[0], expires: exp, path: p[2], customer: p[3], version: p[4], beta: p[5],
		traceparent: p[6], googleKey: p[7] == "g",
	}
	return f, payload, mac, true
}

// errClientHeader refuses a try whose signed client header does not check
// (forged, expired, or its key revoked since).
func errClientHeader() *translate.APIError {
	return &translate.APIError{
		Status: 401, Type: translate.TypeInvalidRequest, Code: translate.CodeInvalidAPIKey,
		Message: "Invalid API key: it is unknown, expired or revoked.",
	}
}

// authenticate is Catalog.Authenticate, or the principal a try's signed
// client header gave.
func (s *stream) authenticate(ctx context.Context, secret string) (*Principal, error) {
	if s.signedTry() {
		s.googleKey = s.try.googleKey
		return s.principal, nil
	}
	return s.p.cat.Authenticate(ctx, secret)
}

// signedTry reports whether a signed client header authenticated this try
// (or token attempt).
func (s *stream) signedTry() bool { return s.try != nil && s.try.signed }

// withoutQueryKey is path without its key query parameter (a Gemini
// client's secret must not travel in the client header).
func withoutQueryKey(path string) string {
	p, q, ok := strings.Cut(path, "?")
	if !ok || !strings.Contains(q, "key=") {
		return path
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return p
	}
	v.Del("key")
	if len(v) == 0 {
		return p
	}
	return p + "?" + v.Encode()
}

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
func (t *tryState) setClientHeader(key, v string) {
	if key == hdrClient {
		t.client = v
	} else {
		t.beta = v
	}
}

// clientBeta is the client's anthropic-beta ("" for none).
func (s *stream) clientBeta() string {
	if s.try == nil {
		return ""
	}
	return s.try.beta
}
