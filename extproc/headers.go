package extproc

import (
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// Headers the processor reads or writes.
const (
	hdrCustomer      = "x-tollgate-customer"
	hdrRequestID     = "x-tollgate-request-id"
	hdrCost          = "x-tollgate-cost"
	hdrContentLength = "content-length"
	hdrContentType   = "content-type"
	hdrRetryAfter    = "retry-after"
	hdrRetryAfterMs  = "retry-after-ms"
)

// clientCredentialHeaders are removed from every request sent upstream.
// (With the retry token, which is the processor's own.)
var clientCredentialHeaders = []string{translate.HdrAuthorization, translate.HdrXAPIKey, translate.HdrAPIKey, hdrCustomer, translate.HdrGoogAPIKey, hdrRetry}

// headerValue is the value of one HeaderValue: raw_value, or value from an
// Envoy that sends only that.
func headerValue(h *corev3.HeaderValue) string {
	if len(h.GetRawValue()) > 0 {
		return string(h.GetRawValue())
	}
	return h.GetValue()
}

// The helpers below read a header without copying its raw_value when the
// copy is not kept (a nil header reads as empty).

// headerIs reports whether h's value is v.
func headerIs(h *corev3.HeaderValue, v string) bool {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return string(raw) == v
	}
	return h.GetValue() == v
}

// headerValueAs is headerValue(h), and v itself when they are equal.
func headerValueAs(h *corev3.HeaderValue, v string) string {
	if headerIs(h, v) {
		return v
	}
	return headerValue(h)
}

// headerInt parses h's value as a decimal integer.
func headerInt(h *corev3.HeaderValue) (int64, error) {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return strconv.ParseInt(string(raw), 10, 64)
	}
	return strconv.ParseInt(h.GetValue(), 10, 64)
}

// headerIsEventStream reports whether h is a text/event-stream content type.
func headerIsEventStream(h *corev3.HeaderValue) bool {
	if raw := h.GetRawValue(); len(raw) > 0 {
		return isEventStream(string(raw))
	}
	return isEventStream(h.GetValue())
}

// headerSet holds the messages of one header a reply sets (headerList).
type headerSet struct {
	opt corev3.HeaderValueOption
	val corev3.HeaderValue
}

// appendFalse is every set header's append=false (R2.9), shared: replies are
// read-only.
var appendFalse = wrapperspb.Bool(false)

// bearerToken returns the token of an "Authorization: Bearer <token>" value.
func bearerToken(v string) string {
	const prefix = "bearer "
	if len(v) > len(prefix) && strings.EqualFold(v[:len(prefix)], prefix) {
		return strings.TrimSpace(v[len(prefix):])
	}
	return ""
}

// isSensitiveHeader reports headers whose values are never logged.
func isSensitiveHeader(k string) bool {
	switch strings.ToLower(k) {
	case translate.HdrAuthorization, translate.HdrXAPIKey, translate.HdrAPIKey, translate.HdrGoogAPIKey, "proxy-authorization", "cookie", "set-cookie":
		return true
	}
	return false
}

// redactedHeaders renders a header map for debug logs, secrets replaced.
func redactedHeaders(hm *corev3.HeaderMap) []string {
	out := make([]string, 0, len(hm.GetHeaders()))
	for _, h := range hm.GetHeaders() {
		v := headerValue(h)
		if isSensitiveHeader(h.GetKey()) {
			v = "[redacted]"
		} else if h.GetKey() == ":path" {
			v = redactQueryKey(v)
		}
		out = append(out, h.GetKey()+": "+v)
	}
	return out
}

// formatUSD renders nano-dollars as a decimal dollar amount ("0.000125000").
func formatUSD(m kernel.Money) string { return string(appendUSD(nil, m)) }

// appendUSD appends formatUSD(m) to b.
func appendUSD(b []byte, m kernel.Money) []byte {
	if m < 0 {
		b = append(b, '-')
		m = -m
	}
	b = strconv.AppendInt(b, int64(m/kernel.Dollar), 10)
	b = append(b, '.')
	frac := int64(m % kernel.Dollar)
	for d := int64(kernel.Dollar / 10); d > 1 && frac < d; d /= 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, frac, 10)
}

// rateLimitHeaders renders OpenAI's x-ratelimit-* headers for the limits that apply.
func rateLimitHeaders(ri kernel.RateLimitInfo) [][2]string {
	return headerList{}.addRateLimits(ri).pairs()
}

// addRateLimits adds the headers of rateLimitHeaders.
func (l headerList) addRateLimits(ri kernel.RateLimitInfo) headerList {
	if ri.LimitRequests > 0 {
		l = l.addInt("x-ratelimit-limit-requests", ri.LimitRequests)
		l = l.addInt("x-ratelimit-remaining-requests", max(ri.RemainingRequests, 0))
		l = l.add("x-ratelimit-reset-requests", formatReset(ri.ResetRequests))
	}
	if ri.LimitTokens > 0 {
		l = l.addInt("x-ratelimit-limit-tokens", ri.LimitTokens)
		l = l.addInt("x-ratelimit-remaining-tokens", max(ri.RemainingTokens, 0))
		l = l.add("x-ratelimit-reset-tokens", formatReset(ri.ResetTokens))
	}
	return l
}

// hdrBudgetWarning names the soft budgets past their limit on an admitted
// request: "<scope> <period> spent=<USD> limit=<USD>", comma-separated.
const hdrBudgetWarning = "x-tollgate-budget-warning"

// addBudgetWarnings adds hdrBudgetWarning when soft budgets are past their limit.
func (l headerList) addBudgetWarnings(ws []kernel.BudgetWarning) headerList {
	if len(ws) == 0 {
		return l
	}
	var b []byte
	for i, w := range ws {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, w.Scope.String()...)
		b = append(b, ' ')
		b = append(b, w.Period.String()...)
		b = append(b, " spent="...)
		b = appendUSD(b, w.Spent)
		b = append(b, " limit="...)
		b = appendUSD(b, w.Limit)
	}
	return l.add(hdrBudgetWarning, string(b))
}

// formatReset renders a reset delay as OpenAI does ("1s", "6m0s", "20ms").
func formatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return d.Round(time.Millisecond).String()
}

// retryAfterHeaders renders retry-after (whole seconds, rounded up, ≥ 1) and
// retry-after-ms (read by OpenAI's SDKs).
func retryAfterHeaders(d time.Duration) [][2]string {
	if d <= 0 {
		return nil
	}
	secs := int64((d + time.Second - 1) / time.Second)
	return [][2]string{
		{hdrRetryAfter, strconv.FormatInt(max(secs, 1), 10)},
		{hdrRetryAfterMs, strconv.FormatInt(max(d.Milliseconds(), 1), 10)},
	}
}

// upstreamStreams reports whether a 2xx reply's content type is a stream the
// translators read incrementally: SSE, or an AWS event stream (Bedrock's
// ConverseStream, application/vnd.amazon.eventstream).
func upstreamStreams(h *corev3.HeaderValue) bool {
	if headerIsEventStream(h) {
		return true
	}
	ct, _, _ := strings.Cut(headerValue(h), ";")
	ct = strings.TrimSpace(ct)
	// Audio (speech) streams back as the provider sends it, not buffered.
	return strings.EqualFold(ct, "application/vnd.amazon.eventstream") || hasPrefixFold(ct, "audio/")
}
