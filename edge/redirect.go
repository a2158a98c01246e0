package edge

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

// Internal redirects, as Envoy's router follows them (router.cc
// Filter::setupRedirect and convertRequestHeadersForInternalRedirect; the
// HCM's recreateStream): when the response to a request forwarded on a
// route with an internal_redirect_policy has one of its codes and a
// location, the request was received whole, the location is absolute (and
// of the request's scheme unless allow_cross_scheme_redirect), fewer than
// max_internal_redirects were followed and a route matches the new
// headers, the response is dropped and the request starts again as a new
// stream: the request headers the router holds, each of
// response_headers_to_copy replaced by the response's (removed when it has
// none), :scheme, :authority and :path from the location,
// x-envoy-original-url set; with the body the router buffered. Otherwise
// the response goes downstream as it is. The router's request headers are
// those its filters released, and on a per-try route those the last try's
// upstream filter released: Envoy runs upstream filters on the router's
// own header map. Tollgate's per-try routes use it for the context-window
// and content-policy fallbacks (envoy/fallback.go).

// redirectPolicy is a route's internal_redirect_policy.
type redirectPolicy struct {
	max         int
	codes       []int
	copied      []string
	crossScheme bool
}

// compileRedirect compiles an internal_redirect_policy (predicates are not
// supported).
func compileRedirect(p *routev3.InternalRedirectPolicy) (*redirectPolicy, error) {
	if len(p.GetPredicates()) > 0 {
		return nil, errors.New("internal redirect predicates are not supported")
	}
	rp := &redirectPolicy{max: 1, crossScheme: p.GetAllowCrossSchemeRedirect()}
	if m := p.GetMaxInternalRedirects(); m != nil {
		rp.max = int(m.GetValue())
	}
	for _, c := range p.GetRedirectResponseCodes() {
		switch c {
		case 301, 302, 303, 307, 308: // Envoy ignores any other
			rp.codes = append(rp.codes, int(c))
		}
	}
	if len(p.GetRedirectResponseCodes()) == 0 {
		rp.codes = []int{http.StatusFound}
	}
	for _, h := range p.GetResponseHeadersToCopy() {
		rp.copied = append(rp.copied, strings.ToLower(h))
	}
	return rp, nil
}

// redirected reports whether resp, the response to the request forwarded
// on rt, was followed as an internal redirect (x.again then runs the
// recreated request: false when that ended the exchange).
func (x *exchange) redirected(rt *route, resp *http.Response) (followed, ok bool) {
	if rt == nil || rt.redirect == nil || !slices.Contains(rt.redirect.codes, resp.StatusCode) ||
		x.async != nil || x.redirects >= rt.redirect.max {
		return false, true
	}
	held := x.fwd
	if x.tryFwd != nil {
		held = x.tryFwd
	}
	h, ok := rt.redirect.request(held, resp)
	if !ok || x.e.state.Load().routes.match(h) == nil {
		return false, true
	}
	_ = resp.Body.Close()
	x.redirects++
	return true, x.recreate(h, x.body)
}

// request is the recreated request's headers: held with the copied headers
// and the location applied; false when the location cannot be followed.
func (p *redirectPolicy) request(held extprocfilter.Headers, resp *http.Response) (extprocfilter.Headers, bool) {
	loc, err := url.Parse(resp.Header.Get("location"))
	if err != nil || !loc.IsAbs() || loc.Host == "" {
		return nil, false
	}
	isHTTP := func(s string) bool { return strings.EqualFold(s, "http") }
	if !p.crossScheme && isHTTP(held.Value(":scheme")) != isHTTP(loc.Scheme) {
		return nil, false
	}
	h := make(extprocfilter.Headers, 0, len(held)+len(p.copied)+1)
	for _, kv := range held {
		switch kv.Key {
		case ":scheme", ":authority", ":path", "x-envoy-original-url":
		default:
			if !slices.Contains(p.copied, kv.Key) {
				h = append(h, kv)
			}
		}
	}
	for _, name := range p.copied {
		for _, v := range resp.Header.Values(name) {
			h = append(h, extprocfilter.Header{Key: name, Value: v})
		}
	}
	loc.Fragment = "" // Envoy strips a fragment from the location
	h = append(h,
		extprocfilter.Header{Key: ":scheme", Value: loc.Scheme},
		extprocfilter.Header{Key: ":authority", Value: loc.Host},
		extprocfilter.Header{Key: ":path", Value: loc.RequestURI()},
		extprocfilter.Header{Key: "x-envoy-original-url", Value: held.Value(":scheme") + "://" + held.Value(":authority") + held.Value(":path")},
	)
	if resp.StatusCode == http.StatusSeeOther && h.Value(":method") != http.MethodGet && h.Value(":method") != http.MethodHead {
		return seeOther(h), true
	}
	return h, true
}

// seeOther is a 303's request: a GET without a body (RFC 7231 §6.4.4).
func seeOther(h extprocfilter.Headers) extprocfilter.Headers {
	out := h[:0]
	for _, kv := range h {
		switch kv.Key {
		case ":method":
			kv.Value = http.MethodGet
		case "content-length":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// recreate starts the request again as a new stream, as Envoy's HCM does
// for an internal redirect: the old stream's filters end (its ext_proc
// stream closes with no response), the new one runs the filter chain of the
// route its headers match, with body. False when the exchange ends (the
// filter answered, or the client left).
func (x *exchange) recreate(h extprocfilter.Headers, body []byte) bool {
	x.f.Release()
	x.f = passthrough{}
	x.releaseTry()
	if x.release != nil {
		x.release()
		x.release = nil
	}
	if !x.newTry() {
		return false
	}
	if h.Value(":method") == http.MethodGet && h.Value("content-length") == "" {
		body = nil // a 303's
	}
	x.fwd, x.tryFwd, x.body, x.clearRoute, x.rerouted, x.rematched = nil, nil, nil, false, nil, false
	x.attemptDeadline.Store(0)
	x.st = x.e.state.Load()
	x.first = x.st.routes.match(h)
	if x.first != nil && x.first.filter != nil {
		x.f = x.first.filter.Start(x.ctx, extprocfilter.WithOwnedHeaders())
	}
	noBody := len(body) == 0
	res, err := x.f.RequestHeaders(h, noBody)
	if !x.onRequest(res, err, noBody) {
		return false
	}
	if !noBody {
		res, err = x.f.RequestBody(body, true)
		return x.onRequest(res, err, true)
	}
	return true
}
