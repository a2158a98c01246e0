package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// The batch endpoints (docs/batches.md). A Service is an http.Handler for
//
//	POST/GET /v1/files, GET/DELETE /v1/files/{id}, GET /v1/files/{id}/content
//	POST/GET /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel
//	POST/GET /v1/messages/batches, GET/DELETE /v1/messages/batches/{id},
//	POST /v1/messages/batches/{id}/cancel, GET /v1/messages/batches/{id}/results
//
// which the data planes hand it (the built-in one in process, Envoy through
// a route to the gateway's batch service). It authenticates the virtual key,
// sends files and batches to the provider of the batch's model with the
// provider's credential, maps every file and batch id to the key (another
// key gets 404), admits a batch's worst case at the batch price when it is
// created and records it pending, for the Poller to settle when it ends.

// Caller is the virtual key of a request and its scopes, key first.
type Caller struct {
	KeyID, UserID, TeamID, OrgID string
	Scopes                       []kernel.Scope
}

// Route is the deployment that serves a batch: its group (the public model),
// its provider, the model name upstream, its price (per token, not yet
// halved) and its provider's batch API.
type Route struct {
	Model, Deployment, Provider, ProviderModel string
	Price                                      kernel.Price
	DefaultMaxTokens                           int64
	Endpoint                                   Endpoint
}

// Catalog is the gateway's configuration as the Service reads it.
type Catalog interface {
	// Authenticate returns the caller of a virtual key's secret
	// (ErrUnauthorized).
	Authenticate(ctx context.Context, secret string) (*Caller, error)
	// Route picks the deployment of model that serves api for c (OpenAI
	// or Azure providers for APIOpenAI, Anthropic for APIAnthropic); when
	// deployment is set, it must be that one (ErrModelNotFound,
	// ErrModelNotAllowed, ErrNoDeployment).
	Route(ctx context.Context, c *Caller, model string, api API, deployment string) (*Route, error)
	// Endpoint is a provider's batch API, by provider id.
	Endpoint(ctx context.Context, provider string) (Endpoint, error)
}

// Admitter admits a batch's worst case and releases it (accounting's
// Accountant: SettleBatch with no entries releases the reservation).
type Admitter interface {
	Admit(ctx context.Context, req *kernel.AdmitRequest) (kernel.Decision, error)
	SettleBatch(ctx context.Context, reservationID string, entries []store.LedgerEntry) error
}

// Lease is how long a batch's reservation lives: the providers' 24 h
// completion window and a margin for the poller.
const Lease = 26 * time.Hour

// Service serves the batch endpoints.
type Service struct {
	cat       Catalog
	acct      Admitter
	st        *Store
	mux       *http.ServeMux
	client    *http.Client
	now       func() time.Time
	log       *slog.Logger
	maxUpload int64
}

// ServiceOption configures a Service.
type ServiceOption func(*Service)

// WithServiceClock sets the clock (tests).
func WithServiceClock(now func() time.Time) ServiceOption { return func(s *Service) { s.now = now } }

// WithServiceLogger sets the logger (default: discard).
func WithServiceLogger(l *slog.Logger) ServiceOption { return func(s *Service) { s.log = l } }

// WithHTTPClient sets the client of the providers' APIs.
func WithHTTPClient(c *http.Client) ServiceOption { return func(s *Service) { s.client = c } }

// WithMaxUpload bounds an uploaded file (default 200 MB, OpenAI's limit of
// a batch input file).
func WithMaxUpload(n int64) ServiceOption { return func(s *Service) { s.maxUpload = n } }

// NewService returns the batch endpoints over cat, acct and the store's
// batch objects.
func NewService(cat Catalog, acct Admitter, st *Store, opts ...ServiceOption) *Service {
	s := &Service{
		cat: cat, acct: acct, st: st, client: &http.Client{Timeout: 10 * time.Minute}, now: time.Now,
		log: slog.New(slog.DiscardHandler), maxUpload: 200 << 20,
	}
	for _, o := range opts {
		o(s)
	}
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/files", s.uploadFile)
	m.HandleFunc("GET /v1/files", s.listFiles)
	m.HandleFunc("GET /v1/files/{id}", s.retrieveFile)
	m.HandleFunc("GET /v1/files/{id}/content", s.fileContent)
	m.HandleFunc("DELETE /v1/files/{id}", s.deleteFile)
	m.HandleFunc("POST /v1/batches", s.createOpenAI)
	m.HandleFunc("GET /v1/batches", s.list(APIOpenAI))
	m.HandleFunc("GET /v1/batches/{id}", s.forward(APIOpenAI, http.MethodGet, ""))
	m.HandleFunc("POST /v1/batches/{id}/cancel", s.forward(APIOpenAI, http.MethodPost, "/cancel"))
	m.HandleFunc("POST /v1/messages/batches", s.createAnthropic)
	m.HandleFunc("GET /v1/messages/batches", s.list(APIAnthropic))
	m.HandleFunc("GET /v1/messages/batches/{id}", s.forward(APIAnthropic, http.MethodGet, ""))
	m.HandleFunc("DELETE /v1/messages/batches/{id}", s.deleteAnthropic)
	m.HandleFunc("POST /v1/messages/batches/{id}/cancel", s.forward(APIAnthropic, http.MethodPost, "/cancel"))
	m.HandleFunc("GET /v1/messages/batches/{id}/results", s.forward(APIAnthropic, http.MethodGet, "/results"))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, apiOf(r), &apiError{status: http.StatusNotFound, code: "unknown_url", msg: "Unknown request URL: " + r.Method + " " + r.URL.Path + "."})
	})
	s.mux = m
	return s
}

type callerKey struct{}

func callerOf(r *http.Request) *Caller { return r.Context().Value(callerKey{}).(*Caller) }

// ServeHTTP authenticates the key (Authorization: Bearer, or x-api-key as
// Anthropic's SDKs send it) and serves the request.
func (s *Service) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		secret = r.Header.Get("X-Api-Key")
	}
	c, err := s.cat.Authenticate(r.Context(), strings.TrimSpace(secret))
	if err != nil || secret == "" {
		fail(w, apiOf(r), &apiError{status: http.StatusUnauthorized, code: "invalid_api_key", msg: "Invalid API key."})
		return
	}
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
}

// apiOf is the client API of a path, for the shape of its errors.
func apiOf(r *http.Request) API {
	if strings.HasPrefix(r.URL.Path, "/v1/messages/") {
		return APIAnthropic
	}
	return APIOpenAI
}

// apiError is an error for the client, in its API's shape.
type apiError struct {
	status                int
	typ, code, param, msg string
}

func (e *apiError) Error() string { return e.msg }

// fail writes e as OpenAI's {"error":{message,type,param,code}} or
// Anthropic's {"type":"error","error":{type,message}}.
func fail(w http.ResponseWriter, api API, e *apiError) {
	var body any
	if api == APIAnthropic {
		body = map[string]any{"type": "error", "error": map[string]string{"type": anthropicType(e.status), "message": e.msg}}
	} else {
		typ := e.typ
		if typ == "" {
			typ = "invalid_request_error"
			if e.status >= 500 {
				typ = "server_error"
			}
		}
		body = map[string]any{"error": map[string]any{"message": e.msg, "type": typ, "param": nullable(e.param), "code": nullable(e.code)}}
	}
	writeJSON(w, e.status, body)
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// anthropicType is the Anthropic error type of a status.
func anthropicType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusServiceUnavailable:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, ok := v.([]byte)
	if !ok {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			status, raw = http.StatusInternalServerError, []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(raw)))
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

// internal is a gateway fault: logged, reported without details.
func (s *Service) internal(r *http.Request, w http.ResponseWriter, what string, err error) {
	s.log.ErrorContext(r.Context(), "batch: "+what, "path", r.URL.Path, "error", err)
	fail(w, apiOf(r), &apiError{status: http.StatusInternalServerError, msg: "The gateway could not " + what + "."})
}

// routeError maps the Catalog's errors.
func routeError(err error, model string) *apiError {
	switch {
	case errors.Is(err, ErrModelNotFound):
		return &apiError{status: http.StatusNotFound, code: "model_not_found", param: "model", msg: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)}
	case errors.Is(err, ErrModelNotAllowed):
		return &apiError{status: http.StatusForbidden, code: "model_not_allowed", param: "model", msg: fmt.Sprintf("The key is not allowed to use the model `%s`.", model)}
	case errors.Is(err, ErrNoDeployment):
		return &apiError{status: http.StatusBadRequest, code: "batch_not_supported", param: "model", msg: fmt.Sprintf("No deployment of the model `%s` serves this batch API.", model)}
	}
	return &apiError{status: http.StatusServiceUnavailable, code: "service_unavailable", msg: fmt.Sprintf("No deployment of the model `%s` is available right now.", model)}
}

// inputError is a bad batch input, for the client.
func inputError(err error, param string) *apiError {
	return &apiError{status: http.StatusBadRequest, param: param, msg: strings.TrimPrefix(err.Error(), ErrInput.Error()+": ")}
}

// call sends one request to a provider's batch API (path under its base
// URL) with the provider's credential.
func (s *Service) call(ctx context.Context, ep Endpoint, api API, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	base := strings.TrimSuffix(ep.BaseURL, "/")
	if api != APIAnthropic {
		base = ep.openAIBase()
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	if b, ok := body.(interface{ Size() int64 }); ok {
		req.ContentLength = b.Size()
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if api == APIAnthropic {
		version := ep.Version
		if version == "" {
			version = "2023-06-01"
		}
		req.Header.Set("X-Api-Key", ep.APIKey)
		req.Header.Set("Anthropic-Version", version)
	} else {
		req.Header.Set(ep.openAIAuth())
	}
	return s.client.Do(req)
}

// upstreamError relays a provider's error answer: its status and body (the
// provider speaks the client's API), the credential redacted; a provider
// refusing the gateway's credential is the gateway's fault (502).
func upstreamError(w http.ResponseWriter, api API, resp *http.Response, key string) {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		fail(w, api, &apiError{status: http.StatusBadGateway, typ: "server_error", code: "upstream_auth", msg: "The provider refused the gateway's credential."})
		return
	}
	if key != "" {
		raw = []byte(strings.ReplaceAll(string(raw), key, "[redacted]"))
	}
	if !json.Valid(raw) {
		fail(w, api, &apiError{status: resp.StatusCode, msg: "The provider answered " + resp.Status + "."})
		return
	}
	writeJSON(w, resp.StatusCode, raw)
}

// unreachable reports a provider that could not be called.
func (s *Service) unreachable(r *http.Request, w http.ResponseWriter, err error) {
	s.log.WarnContext(r.Context(), "batch: provider unreachable", "path", r.URL.Path, "error", err)
	fail(w, apiOf(r), &apiError{status: http.StatusBadGateway, typ: "server_error", code: "upstream_unreachable", msg: "The provider could not be reached."})
}

// readOK reads a provider's successful JSON answer (bounded).
func readOK(resp *http.Response) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err == nil && !json.Valid(raw) {
		err = fmt.Errorf("%w: the answer is not JSON", ErrProvider)
	}
	return raw, err
}

// noID is a provider's answer that could not be read or named no id.
func noID(err error) error {
	if err == nil {
		err = errors.New("the answer has no id")
	}
	return fmt.Errorf("%w: %w", ErrProvider, err)
}

// newID is a random reservation id.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
