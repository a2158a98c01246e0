package translate

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// Errors of translation (those a Catalog returns are in extproc/deps.go).
var (
	// ErrSSETooLarge: an SSE line or event exceeds maxSSEEvent bytes; the rest
	// of the stream passes untranslated and its usage is estimated.
	ErrSSETooLarge = errors.New("extproc: SSE event too large")
	// errNoUsage: a response body carries no usage object.
	errNoUsage = errors.New("extproc: response has no usage")
)

// Error types and codes clients see (the allow-list of client-facing errors:
// every message the processor writes is built here or from a fixed string).
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeBudgetExceeded = "budget_exceeded"
	TypeServer         = "server_error"

	CodeInvalidAPIKey   = "invalid_api_key"
	CodeModelNotFound   = "model_not_found"
	CodeModelNotAllowed = "model_not_allowed"
	CodeUnknownURL      = "unknown_url"
	CodeTooLarge        = "request_too_large"
	CodeRateLimit       = "rate_limit_exceeded"
	CodeBudgetExceeded  = "budget_exceeded"
	CodeUnavailable     = "service_unavailable"
	codeInvalidJSON     = "invalid_json"
	CodeModelUnpriced   = "model_price_missing"
)

// APIError is an error response to the client, in the shape of the endpoint's
// API (OpenAI's by default).
type APIError struct {
	Status  int
	Type    string
	Code    string
	Message string
	Param   string
	// Headers added to the error response (retry-after, x-ratelimit-*).
	Headers [][2]string
}

type openAIErrorBody struct {
	Error openAIErrorDetail `json:"error"`
}

type openAIErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// OpenAIBody renders e as {"error":{"message","type","param","code"}}.
func (e *APIError) OpenAIBody() []byte {
	d := openAIErrorDetail{Message: e.Message, Type: e.Type}
	if e.Param != "" {
		d.Param = &e.Param
	}
	if e.Code != "" {
		d.Code = &e.Code
	}
	b, err := json.Marshal(openAIErrorBody{Error: d})
	if err != nil { // unreachable: strings only
		return []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
	}
	return b
}

func ErrInvalidRequest(msg, param string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: "", Message: msg, Param: param}
}

// statusType is the OpenAI error type for an HTTP status.
func statusType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status >= 500:
		return TypeServer
	default:
		return TypeInvalidRequest
	}
}

// secretPattern matches provider-key-like tokens that providers echo in error
// messages ("Incorrect API key provided: sk-proj-****abcd").
var secretPattern = regexp.MustCompile(`(?i)\b(sk|rk|pk|key|tg)[-_][A-Za-z0-9*_\-]{4,}`)

// redactSecrets removes the provider key and key-like tokens from s.
func redactSecrets(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
		if len(key) >= 8 { // partial echoes: the last characters of the key
			s = strings.ReplaceAll(s, key[len(key)-4:], "****")
		}
	}
	return secretPattern.ReplaceAllString(s, "[redacted]")
}

// maxUpstreamMessage bounds the upstream message copied into an error.
const maxUpstreamMessage = 1024

// upstreamOpenAIError converts a provider error body (OpenAI's or Azure's
// {"error":{...}} shape, or anything else) into the client's error, with the
// upstream status. Messages lose anything that looks like a key; an upstream
// 401/403 is the gateway's credential problem, not the client's, and says so.
func upstreamOpenAIError(status int, body []byte, key string) *APIError {
	e := &APIError{Status: status, Type: statusType(status)}
	var parsed struct {
		Error json.RawMessage `json:"error"`
		// Some OpenAI-compatible servers (vLLM, Ollama) use a flat shape.
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if err := json.Unmarshal(body, &parsed); err == nil {
		var d struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   *string         `json:"param"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		switch {
		case len(parsed.Error) > 0 && json.Unmarshal(parsed.Error, &d) == nil:
			e.Message = d.Message
			if d.Type != "" {
				e.Type = d.Type
			}
			if d.Param != nil {
				e.Param = *d.Param
			}
			var code string
			if json.Unmarshal(d.Code, &code) == nil {
				e.Code = code
			} else if len(d.Code) > 0 && string(d.Code) != "null" {
				e.Code = string(d.Code)
			}
		case len(parsed.Error) > 0 && json.Unmarshal(parsed.Error, &s) == nil:
			e.Message = s
		case parsed.Message != "":
			e.Message = parsed.Message
		case parsed.Detail != "":
			e.Message = parsed.Detail
		}
	}
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(body))
		if e.Message == "" {
			e.Message = "upstream returned HTTP " + strconv.Itoa(status)
		}
	}
	e.sanitizeUpstream(key)
	return e
}

// sanitizeUpstream makes an error read from a provider safe to pass on: the
// message bounded, an upstream 401/403 reported as the gateway's credential
// problem, and anything that looks like a key redacted.
func (e *APIError) sanitizeUpstream(key string) {
	if len(e.Message) > maxUpstreamMessage {
		e.Message = strings.ToValidUTF8(e.Message[:maxUpstreamMessage], "") + "…"
	}
	if e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden {
		e.Message = "the provider rejected the gateway's credentials for this deployment"
		e.Code = "upstream_auth_error"
		e.Param = ""
	}
	e.Message = redactSecrets(e.Message, key)
	e.Param = redactSecrets(e.Param, key)
	e.Code = redactSecrets(e.Code, key)
}

// BodyError maps a parse error of the request body to a 400.
func BodyError(err error) *APIError {
	var se *SyntaxError
	var fe *fieldError
	switch {
	case errors.As(err, &se):
		return &APIError{
			Status: http.StatusBadRequest, Type: TypeInvalidRequest, Code: codeInvalidJSON,
			Message: "We could not parse the JSON body of your request: " + se.Error() + ".",
		}
	case errors.As(err, &fe):
		return ErrInvalidRequest("Invalid '"+fe.Field+"': "+fe.Msg+".", fe.Field)
	default:
		return ErrInvalidRequest("Invalid request body.", "")
	}
}
