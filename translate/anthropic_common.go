package translate

import (
	"encoding/json"
	"net/http"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/anthropic"
)

// Anthropic wire constants.
const (
	// defaultAnthropicVersion is sent as anthropic-version when the deployment
	// has no APIVersion: the only stable version of the Messages API.
	defaultAnthropicVersion = "2023-06-01"
	// defaultAnthropicMaxTokens is the max_tokens sent to Anthropic (which
	// requires it) when neither the client, the kernel's clamp nor the
	// deployment's DefaultMaxTokens gives one.
	defaultAnthropicMaxTokens = 4096

	HdrAnthropicVersion = "anthropic-version"
	HdrAnthropicBeta    = "anthropic-beta"
)

// Anthropic error types (the "type" of {"type":"error","error":{...}}).
const (
	anthropicInvalidRequest = "invalid_request_error"
	anthropicAuthentication = "authentication_error"
	anthropicPermission     = "permission_error"
	anthropicNotFound       = "not_found_error"
	anthropicTooLarge       = "request_too_large"
	anthropicRateLimit      = "rate_limit_error"
	anthropicAPIError       = "api_error"
	anthropicOverloaded     = "overloaded_error"
)

// anthropicStatusType is the Anthropic error type of an HTTP status, as the
// Messages API documents them (400, 401, 403, 404, 413, 429, 500, 529; other
// 4xx are invalid_request_error). The gateway's own 503 (limits unavailable,
// no deployment) is overloaded_error: retryable, like Anthropic's 529.
func anthropicStatusType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return anthropicAuthentication
	case status == http.StatusForbidden:
		return anthropicPermission
	case status == http.StatusNotFound:
		return anthropicNotFound
	case status == http.StatusRequestEntityTooLarge:
		return anthropicTooLarge
	case status == http.StatusTooManyRequests:
		return anthropicRateLimit
	case status == 529 || status == http.StatusServiceUnavailable:
		return anthropicOverloaded
	case status >= 500:
		return anthropicAPIError
	default:
		return anthropicInvalidRequest
	}
}

type AnthropicErrorEnvelope struct {
	Type  string               `json:"type"`
	Error anthropicErrorDetail `json:"error"`
}

type anthropicErrorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// AnthropicErrorBody renders e in Anthropic's error shape
// {"type":"error","error":{"type":…,"message":…}}; the type follows the HTTP
// status (a budget refusal is a 400 invalid_request_error whose message says
// "Budget exceeded", so SDKs do not retry it).
func AnthropicErrorBody(e *APIError) []byte {
	b, err := json.Marshal(AnthropicErrorEnvelope{
		Type:  "error",
		Error: anthropicErrorDetail{Type: anthropicStatusType(e.Status), Message: e.Message},
	})
	if err != nil { // unreachable: strings only
		return []byte(`{"type":"error","error":{"type":"api_error","message":"internal error"}}`)
	}
	return b
}

// upstreamAnthropicError reads a provider error body in Anthropic's shape (or,
// failing that, any shape upstreamOpenAIError understands) into an apiError:
// messages lose anything that looks like a key, and an upstream 401/403 is
// reported as the gateway's credential problem.
func upstreamAnthropicError(status int, body []byte, key string) *APIError {
	var env AnthropicErrorEnvelope
	if json.Unmarshal(body, &env) != nil || env.Type != "error" || env.Error.Message == "" {
		e := upstreamOpenAIError(status, body, key)
		e.Type = anthropicStatusType(status)
		return e
	}
	e := &APIError{Status: status, Type: env.Error.Type, Message: env.Error.Message}
	if e.Type == "" {
		e.Type = anthropicStatusType(status)
	}
	e.sanitizeUpstream(key)
	return e
}

// anthropicHeaders are the credentials and version of an Anthropic request:
// the client's anthropic-version passes through (clientVersion, "" for none),
// else the deployment's APIVersion, else 2023-06-01. anthropic-beta is never
// touched, so the client's passes unchanged.
func anthropicHeaders(t *Target, clientVersion string) [][2]string {
	v := clientVersion
	if v == "" {
		v = t.APIVersion
	}
	if v == "" {
		v = defaultAnthropicVersion
	}
	h := [][2]string{{HdrAnthropicVersion, v}}
	if t.APIKey != "" {
		h = append(h, [2]string{HdrXAPIKey, t.APIKey})
	}
	return h
}

// anthropicMaxTokens is the max_tokens an Anthropic request carries: the
// kernel's clamp, else the client's, else the deployment's DefaultMaxTokens,
// else 4096.
func anthropicMaxTokens(in *Inbound, t *Target) int64 {
	switch {
	case in.ClampMaxTokens > 0:
		return in.ClampMaxTokens
	case in.MaxTokens > 0:
		return in.MaxTokens
	case t.DefaultMaxTokens > 0:
		return t.DefaultMaxTokens
	default:
		return defaultAnthropicMaxTokens
	}
}

// anthropicUsage is the usage object of the Messages API: input_tokens are the
// uncached input, cache reads and cache writes are counted apart.
//
// It is the schema's type with the gateway's methods (kernel, update).
type anthropicUsage anthropic.Usage

// kernel maps the usage onto the kernel's disjoint kinds, each priced apart.
func (u anthropicUsage) kernel() kernel.Usage {
	return kernel.Usage{
		Input:       u.InputTokens,
		CachedInput: u.CacheReadInputTokens,
		CacheWrite:  u.CacheCreationInputTokens,
		Output:      u.OutputTokens,
	}
}

// update overwrites u's counts with those the usage object at v holds; fields
// absent or null are left as they are. ok=false when v is absent or not an
// object.
func (u *anthropicUsage) update(b []byte, v Span) (ok bool) {
	if !v.isObject(b) {
		return false
	}
	_, err := ScanObject(b, v.Start, false, func(key []byte, v Span) error {
		var dst *int64
		switch {
		case KeyIs(key, "input_tokens"):
			dst = &u.InputTokens
		case KeyIs(key, "output_tokens"):
			dst = &u.OutputTokens
		case KeyIs(key, "cache_creation_input_tokens"):
			dst = &u.CacheCreationInputTokens
		case KeyIs(key, "cache_read_input_tokens"):
			dst = &u.CacheReadInputTokens
		default:
			return nil
		}
		if n, ok := intValue(b, v); ok {
			*dst = n
		}
		return nil
	})
	return err == nil
}

// anthropicStreamUsage accumulates the usage of a Messages SSE stream:
// message_start carries the input side (and a first output count), each
// message_delta the cumulative output (and, in newer API versions, cumulative
// input counts, which then replace the earlier ones).
type anthropicStreamUsage struct {
	usage   anthropicUsage
	started bool  // message_start seen
	final   bool  // a message_delta with usage seen
	text    int64 // generated text bytes (for the estimate of an abort)
}

// observe updates the usage from one event's data (the event type is read
// from its "type" member, so the SSE event name is not needed).
func (s *anthropicStreamUsage) observe(data []byte) {
	var typ string
	msg, usage, delta := absent, absent, absent
	_, err := ScanObject(data, 0, true, func(key []byte, v Span) error {
		switch {
		case KeyIs(key, "type"):
			typ, _ = StringValue(data, v)
		case KeyIs(key, "message"):
			msg = v
		case KeyIs(key, "usage"):
			usage = v
		case KeyIs(key, "delta"):
			delta = v
		}
		return nil
	})
	if err != nil {
		return
	}
	switch typ {
	case "message_start":
		if !msg.isObject(data) {
			return
		}
		_, _ = ScanObject(data, msg.Start, false, func(key []byte, v Span) error {
			var u anthropicUsage
			if KeyIs(key, "usage") && u.update(data, v) {
				s.usage, s.started = u, true
			}
			return nil
		})
	case "message_delta":
		// The counts it carries replace the earlier ones; the others stay.
		u := s.usage
		if !u.update(data, usage) {
			return
		}
		s.usage, s.final = u, true
	case "content_block_delta":
		if delta.isObject(data) {
			_, _ = ScanObject(data, delta.Start, false, func(key []byte, v Span) error {
				if KeyIs(key, "text") || KeyIs(key, "partial_json") || KeyIs(key, "thinking") {
					if str, ok := StringValue(data, v); ok {
						s.text += int64(len(str))
					}
				}
				return nil
			})
		}
	}
}

// result is the stream's usage: reported once a message_delta carried the
// final output count; before that (an abort) the input of message_start and an
// output estimate from the streamed text.
func (s *anthropicStreamUsage) result() (kernel.Usage, bool) {
	if s.final {
		return s.usage.kernel(), true
	}
	u := s.usage.kernel()
	u.Output = max(u.Output, EstimateTokens(s.text))
	return u, false
}
