package extproc

import (
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/routing"
)

// Retrying a failed attempt on another deployment (docs/envoy.md, "Retries").
//
// Every attempt is one ext_proc stream, one admission and one settlement:
// the failed attempt is settled like any failed request (the provider did
// not bill it: a $0 ledger row with its deployment and status), and the next
// attempt is admitted afresh on the deployment it lands on, so it is priced
// at that deployment's price and a strict budget that cannot cover its worst
// case refuses it. Settlement stays exactly once per reservation.
//
// The processor decides everything, by routing.Route.Retry: whether the
// failure is retried (429, 500, 502, 503, 504 — the data plane's local
// 503/504 for a connect failure, a reset before the response or a per-try
// timeout included — or a context-window / content-policy refusal when the
// group names fallbacks for it), how long to wait (exponential backoff with
// jitter, at least the provider's retry-after up to routing.MaxRetryWait)
// and that another deployment is left. It answers the failed attempt's
// response with two headers: RetryHeader, an opaque signed token (attempt
// number, attempts allowed, the group to route in, the deployments already
// tried, the first attempt's id), and RetryDelayHeader (milliseconds). A
// data plane that retries drops that response, waits, and sends the client's
// request again through the filter with the token as a request header; the
// new stream routes avoiding the deployments tried. Only a response whose
// headers have not gone downstream can be retried, so a stream is retried
// only before its first byte.
//
// With per-try routing (WithPerTry, pertry.go) the data plane's retry policy
// retries the first kind and the router-level stream never answers with the
// token (no data plane sends a request again once its response reached that
// filter); the token is then carried only by a try's fallback redirect for
// a context-window or content-policy refusal (fallback.go).

// Retry headers (names shared with the data planes).
const (
	hdrRetry      = envoy.RetryHeader
	hdrRetryDelay = envoy.RetryDelayHeader
	hdrAttempts   = "x-tollgate-attempts"
)

// retryKey signs this processor's retry tokens, so a client cannot make one
// up. A gateway gives its replicas one shared key (WithTokenKey, from the
// store); a processor without one signs with this random key, and a token
// from another processor is then ignored (routed as a first attempt).
func newRetryKey() []byte {
	k := make([]byte, 32)
	_, _ = crand.Read(k)
	return k
}

func (p *Processor) signToken(payload string) string {
	m := hmac.New(sha256.New, p.retryKey)
	m.Write([]byte(payload))
	return payload + "&s=" + hex.EncodeToString(m.Sum(nil)[:16])
}

// parseRetry reads a retry token; the zero attempt when it is not valid.
func (p *Processor) parseRetry(v string) routing.Attempt {
	payload, sig, ok := strings.Cut(v, "&s=")
	if !ok || !hmac.Equal([]byte(p.signToken(payload)), []byte(v)) || sig == "" {
		return routing.Attempt{}
	}
	a, _ := routing.ParseAttempt(payload)
	return a
}

// retryHeader reads the request's retry token (request headers).
func (s *stream) retryHeader(v string) {
	s.att = s.p.parseRetry(v)
	if s.att.N > 1 {
		// The first attempt's id, the attempt number, and this stream's own
		// id's last part: unique even when a token is replayed (the ledger
		// keeps one row per id).
		s.id = s.att.Orig + "-" + strconv.Itoa(s.att.N) + "-" + s.id[strings.LastIndexByte(s.id, '-')+1:]
		s.report.Attempts = s.att.N - 1 // traceHeader counts this one
	}
}

// retryAfterFailure decides whether the failed attempt (its status and
// error body) is retried (routing.Route.Retry), and returns the reply
// headers saying so (nil: not retried).
func (s *stream) retryAfterFailure(ctx context.Context, status int, body []byte) [][2]string {
	if s.rt == nil || s.isRouterTry() || s.pinned() {
		return nil
	}
	mode := routing.RetryToken
	if s.isTry() {
		// Per-try routing: the data plane's retry policy retries the
		// failures it can tell; the context-window and content-policy
		// fallbacks are the try's fallback redirect (fallback.go).
		mode = routing.RetryRedirect
	} else if s.p.perTry {
		// With per-try routing the router-level stream never retries: a
		// data plane cannot send a request again once its response reached
		// the router-level filter (Envoy does not), so neither does the
		// built-in one. Its request is a plain group's or a token attempt's.
		return nil
	}
	next, delay, ok := s.rt.Retry(ctx, mode, status, body, s.upRetryAfter)
	if !ok {
		return nil
	}
	if next.Orig == "" {
		next.Orig = s.id
		if s.isTry() && s.try.res != nil {
			next.Orig = s.try.res.id // the request's id, not this try's
		}
	}
	token := s.p.signToken(next.Payload())
	if s.isTry() {
		return s.fallbackRedirect(token)
	}
	return [][2]string{
		{hdrRetry, token},
		{hdrRetryDelay, strconv.FormatInt(delay.Milliseconds(), 10)},
	}
}
