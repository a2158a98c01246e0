package routing

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// RetryBackoffBase is the first retry's backoff; each next one doubles.
	RetryBackoffBase = 25 * time.Millisecond
	// MaxRetryWait caps the wait before a retry, a provider's retry-after
	// included: the next attempt goes to another deployment, and a client
	// is not held for the failed one's quota.
	MaxRetryWait = time.Second
	// MaxAttempts bounds a token's attempt count whatever it claims.
	MaxAttempts = 11
)

// Attempt is where a request is in its attempts: zero for a first attempt
// without a token.
type Attempt struct {
	N     int      // this attempt's number (0: the first, not retried yet)
	Max   int      // attempts allowed in all
	Group string   // group to route in ("": the model the client asked for)
	Avoid []string // deployments already tried
	Orig  string   // the first attempt's request id
	// The failed attempt this one retries: its group, HTTP status and why
	// it was retried (a fallback reason when group differs from it).
	FailedGroup  string
	FailedStatus int
	Why          string
}

// Number is the attempt's number, 1 for a first attempt.
func (a *Attempt) Number() int { return max(a.N, 1) }

// Avoids reports whether deployment id was tried by an earlier attempt.
func (a *Attempt) Avoids(id string) bool { return slices.Contains(a.Avoid, id) }

// RetriableStatuses are the response statuses a data plane's retry policy
// retries (the per-try routes' retriable_status_codes): FailRetryable as the
// data plane sees it, since the processor answers a provider's 401 or 403
// with a 502 (extproc/upstream_auth.go). The data plane's own failures
// (connect failure, reset, timeout) are its 503 and 504.
var RetriableStatuses = []int{429, 500, 502, 503, 504} // read-only

// FailureKind is how an attempt failed (Classify).
type FailureKind uint8

const (
	FailNotRetried    FailureKind = iota
	FailRetryable                 // another deployment of the group, then the fallbacks
	FailContextWindow             // the group's context_window_fallbacks
	FailContentPolicy             // the group's content_policy_fallbacks
)

// Markers of the two refusals routed to their own fallbacks, as providers
// word them (OpenAI codes, Anthropic, Gemini and Bedrock messages); matched
// on the lower-cased error body.
var (
	contextWindowMarkers = []string{
		"context_length_exceeded", "prompt is too long", "maximum context length",
		"context window", "input is too long", "too many input tokens", "exceeds the maximum number of tokens",
	}
	contentPolicyMarkers = []string{
		"content_policy_violation", "content_filter", "content filtering policy", "responsibleaipolicyviolation",
	}
)

// Reason is the fallback reason a retry of this kind gives when it moves to
// another group (Report.FallbackReason).
func (k FailureKind) Reason() string {
	switch k {
	case FailContextWindow:
		return FallbackContextWindow
	case FailContentPolicy:
		return FallbackContentPolicy
	default:
		return FallbackFailed
	}
}

// Classify says how an attempt that answered status with body failed.
func Classify(status int, body []byte) FailureKind {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout, http.StatusUnauthorized:
		return FailRetryable
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity, http.StatusForbidden:
		lb := bytes.ToLower(body)
		for _, m := range contextWindowMarkers {
			if bytes.Contains(lb, []byte(m)) {
				return FailContextWindow
			}
		}
		for _, m := range contentPolicyMarkers {
			if bytes.Contains(lb, []byte(m)) {
				return FailContentPolicy
			}
		}
		if status == http.StatusForbidden {
			return FailRetryable // the provider refused the gateway's credential (extproc/upstream_auth.go)
		}
	}
	return FailNotRetried
}

// RetryDelay is the wait before attempt n+1: exponential backoff from
// retryBackoffBase with equal jitter, at least the provider's retry-after,
// at most maxRetryWait.
func RetryDelay(n int, retryAfter time.Duration) time.Duration {
	d := RetryBackoffBase << min(n-1, 8)
	d = d/2 + rand.N(d/2+1)
	return min(max(d, retryAfter), MaxRetryWait)
}

// Fallback reasons (Report.FallbackReason).
const (
	FallbackCooldown    = "cooldown"
	FallbackRateLimited = "rate_limited"
	// A retry on a fallback group: every deployment of the group failed, or
	// the attempt hit the context window or the content policy.
	FallbackFailed        = "failed"
	FallbackContextWindow = "context_window"
	FallbackContentPolicy = "content_policy"
)

// Without is cands without the deployments a has tried (a new slice when
// some are dropped: cands may be a group's own).
func (a *Attempt) Without(cands []*Deployment) []*Deployment {
	if len(a.Avoid) == 0 || len(cands) == 0 {
		return cands
	}
	out := make([]*Deployment, 0, len(cands))
	for _, d := range cands {
		if !a.Avoids(d.Target.Deployment) {
			out = append(out, d)
		}
	}
	return out
}

// Payload is a's retry token payload (a URL query; the processor signs it).
func (a *Attempt) Payload() string {
	q := url.Values{}
	q.Set("a", strconv.Itoa(a.N))
	q.Set("m", strconv.Itoa(a.Max))
	q.Set("g", a.Group)
	q.Set("x", strings.Join(a.Avoid, ","))
	q.Set("r", a.Orig)
	q.Set("fg", a.FailedGroup)
	q.Set("fs", strconv.Itoa(a.FailedStatus))
	q.Set("w", a.Why)
	return q.Encode()
}

// ParseAttempt reads a retry token's payload; false when it is not a
// retry's (a number below 2 or above the attempts allowed, more than
// MaxAttempts allowed, no first attempt's id).
func ParseAttempt(payload string) (Attempt, bool) {
	q, err := url.ParseQuery(payload)
	if err != nil {
		return Attempt{}, false
	}
	n, _ := strconv.Atoi(q.Get("a"))
	m, _ := strconv.Atoi(q.Get("m"))
	if n < 2 || n > m || m > MaxAttempts || q.Get("r") == "" {
		return Attempt{}, false
	}
	fs, _ := strconv.Atoi(q.Get("fs"))
	a := Attempt{N: n, Max: m, Group: q.Get("g"), Orig: q.Get("r"), FailedGroup: q.Get("fg"), FailedStatus: fs, Why: q.Get("w")}
	if x := q.Get("x"); x != "" {
		a.Avoid = strings.Split(x, ",")
	}
	return a, true
}

// RetryMode is how a failed attempt can be retried.
type RetryMode uint8

const (
	// RetryToken: the data plane sends the request again with the retry
	// token after the delay, whatever the failure kind.
	RetryToken RetryMode = iota
	// RetryRedirect: an upstream try of per-try routing. The data plane's
	// retry policy retries FailRetryable itself; a context-window or
	// content-policy refusal, which a retry policy cannot tell from the
	// client's own 400s, is redirected to a fallback group when the
	// requested group names one (its routes then carry the redirect policy).
	RetryRedirect
)

// Retry decides whether the request's attempt that failed with status and
// body is retried, and returns the next attempt: its number, the attempts
// allowed (1 + the requested group's retries, at most MaxAttempts), the
// group to route in (the current one while it has a deployment not tried,
// else its first fallback group with one in rotation, or the context-window
// / content-policy fallbacks for those refusals), the deployments tried and
// why; Orig is the failed attempt's ("" for a first attempt: the caller's
// request id). delay is the wait before a RetryToken retry (backoff, at
// least retryAfter, at most MaxRetryWait). ok is false when it is not
// retried.
func (r *Route) Retry(ctx context.Context, mode RetryMode, status int, body []byte, retryAfter time.Duration) (next Attempt, delay time.Duration, ok bool) {
	if r.Last == nil {
		return Attempt{}, 0, false
	}
	kind := Classify(status, body)
	if kind == FailNotRetried || mode == RetryRedirect && (kind == FailRetryable || !r.Groups[0].RedirectsFallbacks()) {
		return Attempt{}, 0, false
	}
	a := r.att
	n, limit := a.Number(), a.Max
	if limit == 0 {
		limit = 1 + r.Groups[0].Retries
	}
	if n >= min(limit, MaxAttempts) {
		return Attempt{}, 0, false
	}
	cur := r.Group()
	tried := append(slices.Clip(a.Avoid), r.Last.Target.Deployment)
	var group string
	switch kind {
	case FailRetryable:
		if slices.ContainsFunc(r.cands, func(d *Deployment) bool { return !slices.Contains(tried, d.Target.Deployment) }) {
			group = cur.Name
		} else if group = r.availableGroup(ctx, cur.Fallbacks, tried); group == "" {
			return Attempt{}, 0, false
		}
	case FailContextWindow, FailContentPolicy:
		if group = r.availableGroup(ctx, r.fallbacksFor(cur, kind), tried); group == "" {
			return Attempt{}, 0, false
		}
	}
	next = Attempt{
		N: n + 1, Max: limit, Group: group, Avoid: tried, Orig: a.Orig,
		FailedGroup: cur.Name, FailedStatus: status, Why: kind.Reason(),
	}
	if mode == RetryToken {
		delay = RetryDelay(n, retryAfter)
	}
	return next, delay, true
}

// fallbacksFor is the context-window or content-policy fallback list of the
// current group, else of the requested one.
func (r *Route) fallbacksFor(cur *Group, kind FailureKind) []string {
	pick := func(g *Group) []string {
		if kind == FailContextWindow {
			return g.ContextWindowFallbacks
		}
		return g.ContentPolicyFallbacks
	}
	if l := pick(cur); len(l) > 0 {
		return l
	}
	return pick(r.Groups[0])
}

// availableGroup is the first of names (the key may use it) with a
// deployment in rotation that was not tried; "" when none.
func (r *Route) availableGroup(ctx context.Context, names, tried []string) string {
	now := r.env.Clock.Now()
	for _, name := range names {
		g, err := r.env.Groups.Group(ctx, name)
		if err != nil || g == nil {
			continue
		}
		for _, d := range r.env.Health.Order(g, now) {
			if !slices.Contains(tried, d.Target.Deployment) {
				return name
			}
		}
	}
	return ""
}

// A provider that refuses the gateway's credential (401, or 403 that is not
// a content-policy refusal) is the gateway's fault, not the client's: the
// client's key is fine. Passing the provider's 401 on would make SDKs report
// the client's own key as bad (and some stop retrying for good). The client
// gets 502 with type and code upstream_auth_error and a message naming the
// deployment (its id, which x-tollgate-deployment already shows; never the
// credential). For routing, it is a failed attempt like a 5xx: it is retried
// on another deployment of the group, or a fallback group, when there is one
// (Classify), and a 401 counts towards the deployment's cooldown (allowed
// fails; Router.observe sees only the status, and a 403 may be a
// content-policy refusal).

// AuthFailure reports whether an attempt's status (and error body) says
// the provider refused the gateway's credential.
func AuthFailure(status int, body []byte) bool {
	return status == http.StatusUnauthorized ||
		status == http.StatusForbidden && Classify(status, body) != FailContentPolicy
}
