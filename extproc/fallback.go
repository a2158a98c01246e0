package extproc

import (
	"slices"
	"strconv"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/translate"
)

// Context-window and content-policy fallbacks on per-try routes
// (docs/envoy.md, "Context-window and content-policy fallbacks"). Both are
// 400s (or 403s), which a retry policy cannot tell from the client's own,
// so the try that gets one decides: when the group the client asked for
// names fallbacks for it (its per-try routes then carry the internal
// redirect policy, routing.RedirectsFallbacks) and one of them has a
// deployment in rotation, the try answers with an internal redirect
// instead of the refusal:
//
//   - :status envoy.FallbackRedirectStatus and location the client's URL;
//   - the retry token (retry.go) naming the fallback group;
//   - the client's own values of envoy.FallbackCopiedHeaders.
//
// Envoy's router recreates the stream with the request headers it holds,
// the copied headers replacing (or, when the redirect lacks one, removing)
// theirs, and the body it buffered: the router-level stream sees the
// token and routes to the fallback group as a token attempt. The copy is
// needed because Envoy runs upstream filters on the router's own request
// headers, so the header map the new stream starts from holds the try's
// changes: the provider's credentials instead of the client's, the
// provider's path (the location restores it) and content-length (the token
// attempt sets it again).
//
// The failed try is settled at $0 before it answers; the router-level stream
// that sent it ends without a response and leaves its reservation to the
// try that adopted it (finish); the redirected request is admitted afresh on
// the fallback (a strict budget refuses one it cannot cover).

// tryOrigin is what a try keeps of the request as it arrived, for a
// fallback redirect: the URL and the client's values of the copied headers.
type tryOrigin struct {
	scheme, authority string
	copied            [][2]string
}

// readTryOrigin keeps the URL parts and the copied headers of an upstream
// try's request (the path is s.path).
func (s *stream) readTryOrigin(h *corev3.HeaderMap) {
	if !s.isTry() {
		return
	}
	o := &s.try.origin
	// A retry's map holds the previous try's values of the copied headers
	// (a provider's credential): the redirect then removes them, and the
	// token attempt authenticates from the signed client header, which
	// stays in the map (pertry_client.go).
	later := s.try.signed && s.att.N > 1
	for _, hv := range h.GetHeaders() {
		switch k := hv.GetKey(); {
		case k == ":scheme":
			o.scheme = headerValue(hv)
		case k == ":authority":
			o.authority = headerValue(hv)
		case !later && k != hdrRetry && slices.Contains(envoy.FallbackCopiedHeaders, k):
			o.copied = append(o.copied, [2]string{k, headerValue(hv)})
		}
	}
	if later {
		for _, kv := range [...][2]string{{hdrCustomer, s.customerHdr}, {translate.HdrAnthropicVersion, s.anthropicVersion}} {
			if kv[1] != "" {
				o.copied = append(o.copied, kv)
			}
		}
	}
}

// fallbackRedirect is the reply headers of a try redirected to a fallback
// group with token.
func (s *stream) fallbackRedirect(token string) [][2]string {
	o := &s.try.origin
	scheme := o.scheme
	if scheme == "" {
		scheme = "http"
	}
	authority := o.authority
	if authority == "" {
		authority = "tollgate"
	}
	out := make([][2]string, 0, 3+len(o.copied))
	out = append(out,
		[2]string{":status", strconv.Itoa(envoy.FallbackRedirectStatus)},
		[2]string{"location", scheme + "://" + authority + s.path},
		[2]string{hdrRetry, token},
	)
	return append(out, o.copied...)
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
