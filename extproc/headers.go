package extproc

import (
	"strconv"
	"strings"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Headers the processor reads or writes.
const (
	hdrAuthorization = "authorization"
	hdrXAPIKey       = "x-api-key"
	hdrAPIKey        = "api-key" // Azure-style clients send their key here
	hdrCustomer      = "x-tollgate-customer"
	hdrRequestID     = "x-tollgate-request-id"
	hdrCost          = "x-tollgate-cost"
	hdrContentLength = "content-length"
	hdrContentType   = "content-type"
	hdrRetryAfter    = "retry-after"
	hdrRetryAfterMs  = "retry-after-ms"
)

// clientCredentialHeaders are removed from every request sent upstream.
var clientCredentialHeaders = []string{hdrAuthorization, hdrXAPIKey, hdrAPIKey, hdrCustomer}

// headerValue is the value of one HeaderValue: raw_value, or value from an
// Envoy that sends only that.
func headerValue(h *corev3.HeaderValue) string {
	if len(h.GetRawValue()) > 0 {
		return string(h.GetRawValue())
	}
	return h.GetValue()
}

// setHeader overwrites a header (raw_value only, append=false: R2.9).
func setHeader(k, v string) *corev3.HeaderValueOption {
	// The option, its value and its append flag in one allocation.
	hs := &headerSet{}
	hs.val.Key, hs.val.RawValue = k, []byte(v)
	hs.opt.Header, hs.opt.Append = &hs.val, &hs.app
	return &hs.opt
}

// headerSet holds the messages of one setHeader.
type headerSet struct {
	opt corev3.HeaderValueOption
	val corev3.HeaderValue
	app wrapperspb.BoolValue // false
}

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
	case hdrAuthorization, hdrXAPIKey, hdrAPIKey, "proxy-authorization", "cookie", "set-cookie":
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
		}
		out = append(out, h.GetKey()+": "+v)
	}
	return out
}

// formatUSD renders nano-dollars as a decimal dollar amount ("0.000125000").
func formatUSD(m kernel.Money) string {
	sign := ""
	if m < 0 {
		sign, m = "-", -m
	}
	frac := strconv.FormatInt(int64(m%kernel.Dollar), 10)
	return sign + strconv.FormatInt(int64(m/kernel.Dollar), 10) + "." + strings.Repeat("0", 9-len(frac)) + frac
}

// rateLimitHeaders renders OpenAI's x-ratelimit-* headers for the limits that apply.
func rateLimitHeaders(ri kernel.RateLimitInfo) [][2]string {
	var h [][2]string
	if ri.LimitRequests > 0 {
		h = append(h,
			[2]string{"x-ratelimit-limit-requests", strconv.FormatInt(ri.LimitRequests, 10)},
			[2]string{"x-ratelimit-remaining-requests", strconv.FormatInt(max(ri.RemainingRequests, 0), 10)},
			[2]string{"x-ratelimit-reset-requests", formatReset(ri.ResetRequests)})
	}
	if ri.LimitTokens > 0 {
		h = append(h,
			[2]string{"x-ratelimit-limit-tokens", strconv.FormatInt(ri.LimitTokens, 10)},
			[2]string{"x-ratelimit-remaining-tokens", strconv.FormatInt(max(ri.RemainingTokens, 0), 10)},
			[2]string{"x-ratelimit-reset-tokens", formatReset(ri.ResetTokens)})
	}
	return h
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
