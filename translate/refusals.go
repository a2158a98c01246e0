package translate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// The processor's own refusals, before or instead of a provider's answer,
// and the SSE event that ends a stream with an error: their messages are
// part of the allow-list of client-facing errors (errors.go). The endpoint
// renders an APIError in its API's error shape (OpenAI, Anthropic, Gemini).

// Headers of a refusal that says when to retry.
const (
	HdrRetryAfter   = "retry-after"
	HdrRetryAfterMs = "retry-after-ms" // read by OpenAI's SDKs
)

// RetryAfterHeaders renders retry-after (whole seconds, rounded up, ≥ 1) and
// retry-after-ms; none for d ≤ 0.
func RetryAfterHeaders(d time.Duration) [][2]string {
	if d <= 0 {
		return nil
	}
	secs := int64((d + time.Second - 1) / time.Second)
	return [][2]string{
		{HdrRetryAfter, strconv.FormatInt(max(secs, 1), 10)},
		{HdrRetryAfterMs, strconv.FormatInt(max(d.Milliseconds(), 1), 10)},
	}
}

// ErrUnavailable is the refusal when the gateway cannot check limits and
// budgets (counters or configuration briefly out of reach): 503, retry in a
// second.
func ErrUnavailable() *APIError {
	return &APIError{
		Status: http.StatusServiceUnavailable, Type: TypeServer, Code: CodeUnavailable,
		Message: "The gateway cannot check limits and budgets right now; retry shortly.",
		Headers: RetryAfterHeaders(time.Second),
	}
}

// ErrTooLarge refuses a request body over the gateway's limit of limit bytes.
func ErrTooLarge(limit int) *APIError {
	return &APIError{
		Status: http.StatusRequestEntityTooLarge, Type: TypeInvalidRequest, Code: CodeTooLarge,
		Message: fmt.Sprintf("The request body is larger than the gateway's limit of %d bytes.", limit),
	}
}

// ErrNoDeployment is the client error when no deployment of model can take
// the request: 429 when every one is at its rpm/tpm quota (d, the refused
// admission), 503 when they are cooling down (d nil; retry-after: the
// soonest end).
func ErrNoDeployment(model string, d *kernel.Decision, retryAfter time.Duration) *APIError {
	if d != nil {
		return &APIError{
			Status: 429, Type: "requests", Code: CodeRateLimit,
			Message: "Rate limit reached for every deployment of the model `" + model + "`: the providers' quotas are used up for this minute.",
			Headers: RetryAfterHeaders(d.RetryAfter),
		}
	}
	e := ErrUnavailable()
	e.Message = "No deployment of the model `" + model + "` is available right now: every one is cooling down after failures."
	e.Headers = RetryAfterHeaders(retryAfter)
	return e
}

// ErrClientHeader refuses a per-try routing try whose signed client header
// does not check (forged, expired, or its key revoked since).
func ErrClientHeader() *APIError {
	return &APIError{
		Status: 401, Type: TypeInvalidRequest, Code: CodeInvalidAPIKey,
		Message: "Invalid API key: it is unknown, expired or revoked.",
	}
}

// ErrUnpriced is the refusal of a model without a price under a strict
// budget (kernel.ReasonUnpriced, d), before any provider call: HTTP 400 (a
// retry cannot help, an operator must act), type invalid_request_error, code
// model_price_missing, naming the model the price is missing for and the
// scope whose budget could not be enforced. For a request of a route charged
// per unit (u, nil on token routes) the message names the unit the price is
// missing in and the `tollgate price set` flag that sets it, ready to run
// with a price in place of DOLLARS.
func ErrUnpriced(t *Target, d kernel.Decision, u *UnitRequest) *APIError {
	name := t.ProviderModel
	if name == "" {
		name = t.Model
	}
	what := fmt.Sprintf("The model `%s`", name)
	if t.Model != "" && t.Model != name {
		what = fmt.Sprintf("The model `%s` (served as `%s`)", t.Model, name)
	}
	missing, cmd := "", name+" …"
	if per, flag := unitPriceFlag(u); flag != "" {
		missing, cmd = " "+per, name+" "+flag+" DOLLARS"
	}
	msg := fmt.Sprintf("%s has no price%s, so the %s's budget cannot be enforced: the gateway refuses it "+
		"rather than charge $0. An operator must set its price (tollgate price set %s) or declare "+
		"the deployment free (--free).", what, missing, d.Scope.Noun(), cmd)
	return &APIError{
		Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: CodeModelUnpriced, Param: "model",
		Message: msg,
	}
}

// unitPriceFlag is how a unit request's missing price is named ("per
// image") and the `tollgate price set` flag that sets it; "" on token routes.
func unitPriceFlag(u *UnitRequest) (per, flag string) {
	if u == nil {
		return "", ""
	}
	switch u.Unit {
	case kernel.UnitImages:
		return "per image", "--per-image"
	case kernel.UnitSeconds:
		return "per second of audio", "--per-second"
	case kernel.UnitCharacters:
		return "per character", "--per-character"
	case kernel.UnitSearches:
		return "per search unit", "--per-search-unit"
	}
	return "", ""
}

// TypeUpstreamAuth is the error type and code of a provider refusing the
// gateway's credential.
const TypeUpstreamAuth = "upstream_auth_error"

// ErrUpstreamAuth is the client's error when the provider of deployment
// refused the gateway's credential with status (401, or a 403 that is not a
// content-policy refusal): the gateway's fault, not the client's, whose key
// is fine. 502 (a failed attempt, retried like a 5xx), naming the deployment
// and never the credential.
func ErrUpstreamAuth(deployment string, status int) *APIError {
	return &APIError{
		Status: http.StatusBadGateway, Type: TypeUpstreamAuth, Code: TypeUpstreamAuth,
		Message: "The provider of deployment `" + deployment + "` rejected the gateway's credentials (HTTP " +
			strconv.Itoa(status) + "). Your API key is fine; the gateway's operator must fix this deployment's credential.",
	}
}

// CodeUpstreamReset is the error code of the event that ends a cut stream.
const CodeUpstreamReset = "upstream_reset"

// ErrStreamCut is the error of a stream the provider cut before its end.
func ErrStreamCut() *APIError {
	return &APIError{
		Status: http.StatusBadGateway, Type: TypeServer, Code: CodeUpstreamReset,
		Message: "the provider's stream was cut before its end; the reply is incomplete",
	}
}

// ErrorEvent is e as the SSE event that ends a stream in the client's API
// (api, its request path): OpenAI chat and completions a data line with
// {"error":{…}}, the Responses API an "error" event (numbered by tr when it
// is a Sequencer), Anthropic an "event: error" with its error envelope, the
// Gemini API (alt=sse) a data line with Google's {"error":{…}}. nil for a
// Gemini JSON-array stream.
func ErrorEvent(api API, path string, tr Translator, e *APIError) []byte {
	switch api {
	case APIResponses:
		ev := struct {
			Type    string  `json:"type"`
			Code    string  `json:"code"`
			Message string  `json:"message"`
			Param   *string `json:"param"`
			Seq     *int64  `json:"sequence_number,omitempty"`
		}{Type: "error", Code: e.Code, Message: e.Message}
		if sq, ok := tr.(Sequencer); ok {
			if n, ok := sq.NextSequence(); ok {
				ev.Seq = &n
			}
		}
		b, _ := json.Marshal(ev) // strings and ints only
		return AppendSSEEvent(nil, "error", b)
	case APIMessages:
		return AppendSSEEvent(nil, "error", AnthropicErrorBody(e))
	case APIGeminiGenerate:
		if !strings.Contains(path, "alt=sse") {
			return nil
		}
		return AppendSSEEvent(nil, "", GeminiErrorBody(e))
	default:
		return AppendSSEEvent(nil, "", e.OpenAIBody())
	}
}

// ErrDecision maps a refused admission. Budgets are HTTP 400 with type and
// code "budget_exceeded", as LiteLLM returns them (clients and SDKs do not
// retry a 400, and waiting does not refill a budget); rate limits are 429 with
// retry-after and x-ratelimit-* headers.
func ErrDecision(d kernel.Decision, model string) *APIError {
	scope := d.Scope.Noun()
	switch d.Reason {
	case kernel.ReasonKeyExpired:
		return &APIError{
			Status: http.StatusUnauthorized, Type: TypeInvalidRequest, Code: CodeInvalidAPIKey,
			Message: "Invalid API key: it has expired.",
		}
	case kernel.ReasonModelNotAllowed:
		return &APIError{
			Status: http.StatusForbidden, Type: TypeInvalidRequest, Code: CodeModelNotAllowed, Param: "model",
			Message: fmt.Sprintf("The %s is not allowed to use the model `%s`.", scope, model),
		}
	case kernel.ReasonBudgetExceeded:
		return &APIError{
			Status: http.StatusBadRequest, Type: TypeBudgetExceeded, Code: CodeBudgetExceeded,
			Message: fmt.Sprintf("Budget exceeded for the %s.", scope),
		}
	case kernel.ReasonUnpriced:
		return ErrUnpriced(&Target{Model: model, ProviderModel: model}, d, nil)
	case kernel.ReasonRequestLimit, kernel.ReasonTokenLimit, kernel.ReasonParallelLimit:
		what, typ := "requests per minute", "requests"
		switch d.Reason {
		case kernel.ReasonTokenLimit:
			what, typ = "tokens per minute", "tokens"
		case kernel.ReasonParallelLimit:
			what = "parallel requests"
		}
		e := &APIError{
			Status: http.StatusTooManyRequests, Type: typ, Code: CodeRateLimit,
			Message: fmt.Sprintf("Rate limit reached for the %s: %s.", scope, what),
		}
		e.Headers = append(RetryAfterHeaders(d.RetryAfter), RateLimitHeaders(d.RateLimit)...)
		return e
	default: // ReasonDuplicate or unknown: a gateway fault, not the client's
		return &APIError{
			Status: http.StatusInternalServerError, Type: TypeServer, Code: "admission_error",
			Message: "The gateway could not admit the request.",
		}
	}
}

// RateLimitHeaders renders OpenAI's x-ratelimit-* headers for the limits
// that apply (the processor adds the same to admitted replies).
func RateLimitHeaders(ri kernel.RateLimitInfo) [][2]string {
	var out [][2]string
	if ri.LimitRequests > 0 {
		out = append(out,
			[2]string{"x-ratelimit-limit-requests", strconv.FormatInt(ri.LimitRequests, 10)},
			[2]string{"x-ratelimit-remaining-requests", strconv.FormatInt(max(ri.RemainingRequests, 0), 10)},
			[2]string{"x-ratelimit-reset-requests", FormatReset(ri.ResetRequests)})
	}
	if ri.LimitTokens > 0 {
		out = append(out,
			[2]string{"x-ratelimit-limit-tokens", strconv.FormatInt(ri.LimitTokens, 10)},
			[2]string{"x-ratelimit-remaining-tokens", strconv.FormatInt(max(ri.RemainingTokens, 0), 10)},
			[2]string{"x-ratelimit-reset-tokens", FormatReset(ri.ResetTokens)})
	}
	return out
}

// FormatReset renders a rate limit's reset delay as OpenAI does ("1s",
// "6m0s", "20ms").
func FormatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return d.Round(time.Millisecond).String()
}

// ErrPassthroughUnpriced is the strict budget's refusal of a call that cannot be
// priced: no model price and no price per call.
func ErrPassthroughUnpriced(provider string, t *Target, d kernel.Decision) *APIError {
	what := "This call names no model"
	if t.ProviderModel != "" {
		what = fmt.Sprintf("The model `%s` has no price", t.ProviderModel)
	}
	return &APIError{
		Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: "passthrough_price_missing",
		Message: fmt.Sprintf("%s and provider `%s` has no price per call, so the %s's budget cannot be enforced: "+
			"the gateway refuses it rather than charge $0. An operator must set the provider's price per call "+
			"(--price-per-call) or the model's price.", what, provider, d.Scope.Noun()),
	}
}

// ErrResolve is the client's error of a model group the key could not be
// given a deployment of: not allowed (403), not found (404), else none of
// its deployments available right now (503).
func ErrResolve(model string, notAllowed, notFound bool) *APIError {
	switch {
	case notAllowed:
		return &APIError{
			Status: http.StatusForbidden, Type: TypeInvalidRequest, Code: CodeModelNotAllowed, Param: "model",
			Message: fmt.Sprintf("This key is not allowed to use the model `%s`.", model),
		}
	case notFound:
		return &APIError{
			Status: http.StatusNotFound, Type: TypeInvalidRequest, Code: CodeModelNotFound, Param: "model",
			Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model),
		}
	}
	return &APIError{
		Status: http.StatusServiceUnavailable, Type: TypeServer, Code: CodeUnavailable,
		Message: fmt.Sprintf("No deployment of the model `%s` is available right now.", model),
	}
}
