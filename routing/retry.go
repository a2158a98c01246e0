package routing

import (
	"bytes"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"
)

const (
	// retryBackoffBase is the first retry's backoff; each next one doubles.
	RetryBackoffBase = 25 * time.Millisecond
	// maxRetryWait caps the wait before a retry, a provider's retry-after
	// included: the next attempt goes to another deployment, and a client
	// is not held for the failed one's quota.
	MaxRetryWait = time.Second
	// maxAttempts bounds a token's attempt count whatever it claims.
	MaxAttempts = 11
)

// attempt is where a request is in its attempts: zero for a first attempt
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

func (a *Attempt) Number() int { return max(a.N, 1) }

func (a *Attempt) Avoids(id string) bool { return slices.Contains(a.Avoid, id) }

// failure kinds an attempt can end with.
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

// reason is the fallback reason a retry of this kind gives when it moves to
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

// classify says how an attempt that answered status with body failed.
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

// retryDelay is the wait before attempt n+1: exponential backoff from
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
