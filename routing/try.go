package routing

import (
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/envoy"
)

// Try is a stream's part in per-try routing (docs/envoy.md, "Retries across
// deployments"): either the router-level stream of a per-try group or an
// upstream try, one per deployment tried. The processor reads and writes its
// fields; it is here so that routing's per-try logic and its tests share it.
type Try struct {
	Router bool   // the router-level stream of a per-try group
	Owned  bool   // router: a try answered the request (it settled)
	Dep    string // upstream: the deployment this try landed on
	// upstream: the reservation the router-level stream made, when this
	// try adopts it (nil: none).
	Res     *Reserved
	Retried bool      // a failed try the retry policy retries
	Order   int       // deployments in the try order (the chain's)
	Origin  TryOrigin // upstream: the request as it arrived
	// upstream: the signed client header (token.go), whether it
	// authenticated the try, and how the client sent its key.
	Client, Beta      string // Beta: the client's anthropic-beta
	Signed, GoogleKey bool
}

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
//   - the retry token (token.go) naming the fallback group;
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

// TryOrigin is what a try keeps of the request as it arrived, for a
// fallback redirect: the URL and the client's values of the copied headers
// (envoy.FallbackCopiedHeaders).
type TryOrigin struct {
	Scheme, Authority string
	Copied            [][2]string
}

// Redirect is the reply headers of a try redirected to a fallback group
// with token: the client's URL (its path), the token, the copied headers.
func (o *TryOrigin) Redirect(path, token string) [][2]string {
	scheme := o.Scheme
	if scheme == "" {
		scheme = "http"
	}
	authority := o.Authority
	if authority == "" {
		authority = "tollgate"
	}
	out := make([][2]string, 0, 3+len(o.Copied))
	out = append(out,
		[2]string{":status", strconv.Itoa(envoy.FallbackRedirectStatus)},
		[2]string{"location", scheme + "://" + authority + path},
		[2]string{envoy.RetryHeader, token},
	)
	return append(out, o.Copied...)
}

// Reserved is the reservation the router-level stream hands to the first
// try (envoy.ReservedHeader): its id and deployment, the output bound it
// reserved and whether it lowered the client's, and the fallback reason
// that brought it to its group ("" when none).
type Reserved struct {
	ID, Dep, Why string
	Max          int64
	Clamped      bool
}

// Header is r's envoy.ReservedHeader value: "id;dep;max;clamped;why".
func (r *Reserved) Header() string {
	clamped := "0"
	if r.Clamped {
		clamped = "1"
	}
	return r.ID + ";" + r.Dep + ";" + strconv.FormatInt(r.Max, 10) + ";" + clamped + ";" + r.Why
}

// ParseReserved reads an envoy.ReservedHeader value; nil when malformed.
func ParseReserved(v string) *Reserved {
	f := strings.Split(v, ";")
	if len(f) != 5 || f[0] == "" {
		return nil
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil
	}
	return &Reserved{ID: f[0], Dep: f[1], Max: n, Clamped: f[3] == "1", Why: f[4]}
}
