package extproc

import (
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
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
// The processor decides everything: whether the failure is retried (429,
// 500, 502, 503, 504 — the data plane's local 503/504 for a connect failure,
// a reset before the response or a per-try timeout included — or a
// context-window / content-policy refusal when the group names fallbacks for
// it), how long to wait (exponential backoff with jitter, at least the
// provider's retry-after up to maxRetryWait) and that another deployment is
// left. It answers the failed attempt's response with two headers: RetryHeader,
// an opaque signed token (attempt number, attempts allowed, the group to
// route in, the deployments already tried, the first attempt's id), and
// RetryDelayHeader (milliseconds). A data plane that retries drops that
// response, waits, and sends the client's request again through the filter
// with the token as a request header; the new stream routes avoiding the
// deployments tried. Only a response whose headers have not gone downstream
// can be retried, so a stream is retried only before its first byte.
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
	q, err := url.ParseQuery(payload)
	if err != nil {
		return routing.Attempt{}
	}
	n, _ := strconv.Atoi(q.Get("a"))
	m, _ := strconv.Atoi(q.Get("m"))
	if n < 2 || n > m || m > routing.MaxAttempts || q.Get("r") == "" {
		return routing.Attempt{}
	}
	fs, _ := strconv.Atoi(q.Get("fs"))
	a := routing.Attempt{N: n, Max: m, Group: q.Get("g"), Orig: q.Get("r"), FailedGroup: q.Get("fg"), FailedStatus: fs, Why: q.Get("w")}
	if x := q.Get("x"); x != "" {
		a.Avoid = strings.Split(x, ",")
	}
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

// withoutTried drops the deployments already tried from cands (a new slice:
// cands may be the group's own).
func (s *stream) withoutTried(cands []*routing.Deployment) []*routing.Deployment {
	if len(s.att.Avoid) == 0 || len(cands) == 0 {
		return cands
	}
	out := make([]*routing.Deployment, 0, len(cands))
	for _, d := range cands {
		if !s.att.Avoids(d.Target.Deployment) {
			out = append(out, d)
		}
	}
	return out
}

// retryAfterFailure decides whether the failed attempt (its status and
// error body) is retried, and returns the reply headers saying so (nil:
// not retried).
func (s *stream) retryAfterFailure(ctx context.Context, status int, body []byte) [][2]string {
	if s.rt == nil || s.rt.last == nil || s.isRouterTry() || s.pinned() {
		return nil
	}
	kind := routing.Classify(status, body)
	if kind == routing.FailNotRetried || s.isTry() && (kind == routing.FailRetryable || !s.redirectsFallbacks()) {
		// Per-try routing: the data plane's retry policy retries these;
		// the context-window and content-policy fallbacks, which a retry
		// policy cannot tell from the client's own 400s, are the try's
		// fallback redirect (fallback.go), when its route has the policy.
		return nil
	}
	if s.p.perTry && !s.isTry() {
		// With per-try routing the router-level stream never retries: a
		// data plane cannot send a request again once its response reached
		// the router-level filter (Envoy does not), so neither does the
		// built-in one. Its request is a plain group's or a token attempt's.
		return nil
	}
	n, limit := s.att.Number(), s.att.Max
	if limit == 0 {
		limit = 1 + s.rt.groups[0].Retries
	}
	if n >= min(limit, routing.MaxAttempts) {
		return nil
	}
	dep := s.rt.last
	cur := s.rt.groups[len(s.rt.groups)-1]
	tried := append(slices.Clip(s.att.Avoid), dep.Target.Deployment)
	var group string
	switch kind {
	case routing.FailRetryable:
		if slices.ContainsFunc(s.rt.cands, func(d *routing.Deployment) bool { return !slices.Contains(tried, d.Target.Deployment) }) {
			group = cur.Name
		} else if group = s.availableGroup(ctx, cur.Fallbacks, tried); group == "" {
			return nil
		}
	case routing.FailContextWindow, routing.FailContentPolicy:
		if group = s.availableGroup(ctx, s.fallbacksFor(cur, kind), tried); group == "" {
			return nil
		}
	}
	orig := s.att.Orig
	if orig == "" {
		orig = s.id
		if s.isTry() && s.try.res != nil {
			orig = s.try.res.id // the request's id, not this try's
		}
	}
	q := url.Values{}
	q.Set("a", strconv.Itoa(n+1))
	q.Set("m", strconv.Itoa(limit))
	q.Set("g", group)
	q.Set("x", strings.Join(tried, ","))
	q.Set("r", orig)
	q.Set("fg", cur.Name)
	q.Set("fs", strconv.Itoa(status))
	q.Set("w", kind.Reason())
	if s.isTry() {
		return s.fallbackRedirect(s.p.signToken(q.Encode()))
	}
	delay := routing.RetryDelay(n, s.upRetryAfter)
	return [][2]string{
		{hdrRetry, s.p.signToken(q.Encode())},
		{hdrRetryDelay, strconv.FormatInt(delay.Milliseconds(), 10)},
	}
}

// fallbacksFor is the context-window or content-policy fallback list of the
// current group, else of the group the client asked for.
func (s *stream) fallbacksFor(cur *routing.Group, kind routing.FailureKind) []string {
	pick := func(g *routing.Group) []string {
		if kind == routing.FailContextWindow {
			return g.ContextWindowFallbacks
		}
		return g.ContentPolicyFallbacks
	}
	if l := pick(cur); len(l) > 0 {
		return l
	}
	return pick(s.rt.groups[0])
}

// availableGroup is the first of names (the key may use it) with a
// deployment in rotation that was not tried; "" when none.
func (s *stream) availableGroup(ctx context.Context, names, tried []string) string {
	gc, ok := s.p.cat.(GroupCatalog)
	if !ok {
		return ""
	}
	now := s.p.now()
	for _, name := range names {
		g, err := gc.ResolveGroup(ctx, s.principal, name)
		if err != nil || g == nil {
			continue
		}
		for _, d := range s.p.router.Order(g, now) {
			if !slices.Contains(tried, d.Target.Deployment) {
				return name
			}
		}
	}
	return ""
}
