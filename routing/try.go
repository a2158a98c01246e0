package routing

import (
	"strconv"
	"strings"
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

// TryOrigin is what a try keeps of the request as it arrived, for a
// fallback redirect: the URL and the client's values of the copied headers
// (envoy.FallbackCopiedHeaders).
type TryOrigin struct {
	Scheme, Authority string
	Copied            [][2]string
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
