package envoy

// Names of the context-window and content-policy fallbacks on per-try
// routes (docs/envoy.md, "Context-window and content-policy fallbacks"),
// shared by the xDS builder, the processor and the built-in data plane.
//
// A try refused for its context window or its content policy answers with
// an internal redirect: FallbackRedirectStatus, a location naming the
// client's URL, the retry token naming the fallback group, and the client's
// own values of FallbackCopiedHeaders. The per-try route's
// internal_redirect_policy makes Envoy's router recreate the stream with
// those headers copied into the request: the router-level ext_proc filter
// sees the token and routes to the fallback group.
const (
	// FallbackRedirectStatus is the status of a try's fallback redirect
	// (307 keeps the method and the body; no provider answers a chat
	// request with it, and a provider's own 307 loses its location).
	FallbackRedirectStatus = 307
	// MaxFallbackRedirects is the per-try route's max_internal_redirects:
	// the redirected request is a token attempt on a plain route, which
	// has no upstream filter to redirect again.
	MaxFallbackRedirects = 1
)

// FallbackCopiedHeaders are the per-try route's response_headers_to_copy.
// Envoy's upstream filters mutate the router's request headers in place,
// so after a try the request holds the try's changes (the provider's
// credentials, its path); the redirect restores the client's credentials
// (a header the redirect lacks is removed from the request) and the
// location its path.
var FallbackCopiedHeaders = []string{
	"authorization", "x-api-key", "api-key", "x-goog-api-key", "x-tollgate-customer", "anthropic-version", RetryHeader,
}
