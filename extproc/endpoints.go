package extproc

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/tollgate-ai/tollgate/translate"
)

// endpoint is one client-facing route: the processor's whole pipeline is
// generic, an endpoint only says which API its body speaks and how its errors
// look. Endpoints without an API are answered at request headers by reply.
type endpoint struct {
	Method string
	Path   string
	// API of the request body; the translator is looked up by it.
	API translate.API
	// NoOutput: the endpoint generates no output tokens (embeddings).
	NoOutput bool
	// Reply answers the request at request headers (GET /v1/models).
	Reply func(ctx context.Context, s *stream) *apiReply
	// ErrorBody renders errors in the endpoint's API shape; nil means OpenAI's.
	ErrorBody func(e *translate.APIError) []byte
	// Prefix: Path is a prefix followed by one or more path segments
	// (/v1/models/{id}); Method "" accepts any method (Reply tells them apart).
	Prefix bool
	// Parse reads the request (the :path, query included, and the body); nil
	// means parseRequest of the body (the Gemini API takes the model from the
	// path).
	Parse func(path string, body []byte) (*translate.Inbound, error)
	// QueryKey: the virtual key may come in the query (?key=, Google's APIs).
	QueryKey bool
	// Multipart: the body is a multipart/form-data upload, of which the
	// processor sees the first bytes (BUFFERED_PARTIAL; units.go).
	Multipart bool
}

// parse reads the request of the endpoint; into holds it unless the
// endpoint has a Parse of its own.
func (e *endpoint) parse(path string, body []byte, into *translate.ParsedRequest) (*translate.Inbound, error) {
	if e.Parse != nil {
		return e.Parse(path, body)
	}
	return translate.ParseRequestInto(into, e.API, body)
}

// apiReply is a complete response produced by the gateway itself.
type apiReply struct {
	Status int
	Body   []byte
}

var endpoints = map[string]*endpoint{}

// prefixEndpoints are the endpoints with path parameters, tried in order
// when no exact path matches.
var prefixEndpoints []*endpoint

// registerEndpoint is called from init; the path is matched exactly (query
// string excluded), or as a prefix when e.Prefix.
func registerEndpoint(e *endpoint) {
	if e.Prefix {
		prefixEndpoints = append(prefixEndpoints, e)
		return
	}
	endpoints[e.Path] = e
}

// lookupPrefix finds the prefix endpoint of a path (query excluded).
func lookupPrefix(path string) *endpoint {
	for _, e := range prefixEndpoints {
		if rest, ok := strings.CutPrefix(path, e.Path); ok && rest != "" {
			return e
		}
	}
	return nil
}

func init() {
	registerEndpoint(&endpoint{Method: http.MethodPost, Path: "/v1/chat/completions", API: translate.APIChat})
	registerEndpoint(&endpoint{Method: http.MethodPost, Path: "/v1/completions", API: translate.APICompletions})
	registerEndpoint(&endpoint{Method: http.MethodPost, Path: "/v1/embeddings", API: translate.APIEmbeddings, NoOutput: true})
	registerEndpoint(&endpoint{Method: http.MethodGet, Path: "/v1/models", Reply: modelsReply})
}

// lookupEndpoint finds the endpoint of a :path.
func lookupEndpoint(path string) *endpoint {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	if e := endpoints[path]; e != nil {
		return e
	}
	if e := geminiModelEndpoint(path); e != nil {
		return e
	}
	return lookupPrefix(path)
}

// lookupEndpointHeader is lookupEndpoint of a :path header.
func lookupEndpointHeader(h *corev3.HeaderValue) *endpoint {
	raw := h.GetRawValue()
	if len(raw) == 0 {
		return lookupEndpoint(h.GetValue())
	}
	if i := bytes.IndexByte(raw, '?'); i >= 0 {
		raw = raw[:i]
	}
	if e := endpoints[string(raw)]; e != nil {
		return e
	}
	if e := geminiModelEndpoint(string(raw)); e != nil {
		return e
	}
	return lookupPrefix(string(raw))
}

func (e *endpoint) errorBody(err *translate.APIError) []byte {
	if e != nil && e.ErrorBody != nil {
		return e.ErrorBody(err)
	}
	return err.OpenAIBody()
}

type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// modelsReply lists the models the key may use, in OpenAI's list format (in
// Anthropic's when the client sent anthropic-version).
func modelsReply(ctx context.Context, s *stream) *apiReply {
	models := s.p.cat.Models(ctx, s.principal)
	if s.anthropicVersion != "" {
		return anthropicModelsReply(models)
	}
	list := modelList{Object: "list", Data: make([]modelEntry, 0, len(models))}
	for _, m := range models {
		owned := m.OwnedBy
		if owned == "" {
			owned = "tollgate"
		}
		var created int64
		if !m.Created.IsZero() {
			created = m.Created.Unix()
		}
		list.Data = append(list.Data, modelEntry{ID: m.ID, Object: "model", Created: created, OwnedBy: owned})
	}
	slices.SortFunc(list.Data, func(a, b modelEntry) int { return strings.Compare(a.ID, b.ID) })
	body, err := json.Marshal(list)
	if err != nil {
		return &apiReply{Status: http.StatusInternalServerError, Body: (&translate.APIError{Status: 500, Type: translate.TypeServer, Message: "internal error"}).OpenAIBody()}
	}
	return &apiReply{Status: http.StatusOK, Body: body}
}

// Adding an endpoint (e.g. Anthropic's Messages API, in its own file):
//
//	func init() {
//		registerEndpoint(&endpoint{Method: http.MethodPost, Path: "/v1/messages",
//			API: APIMessages, ErrorBody: anthropicErrorBody})
//	}
//
// and a row per provider in the translators table (translate/translators.go).

// OpenAI's Responses API is served at POST /v1/responses: natively where the
// upstream speaks it (translate/responses_native.go), else translated to chat
// completions, for Anthropic through the chat → Messages translator
// (translate/responses_chat.go).
func init() {
	registerEndpoint(&endpoint{Method: http.MethodPost, Path: "/v1/responses", API: translate.APIResponses})
}

// Anthropic's Messages API is served at POST /v1/messages and POST
// /v1/messages/count_tokens, with errors in Anthropic's shape. The key may come
// in x-api-key (Anthropic's SDKs, Claude Code with ANTHROPIC_API_KEY) or
// Authorization: Bearer (ANTHROPIC_AUTH_TOKEN): the processor reads both.
func init() {
	registerEndpoint(&endpoint{
		Method: http.MethodPost, Path: "/v1/messages",
		API: translate.APIMessages, ErrorBody: translate.AnthropicErrorBody,
	})
	registerEndpoint(&endpoint{
		Method: http.MethodPost, Path: "/v1/messages/count_tokens",
		API: translate.APIMessagesCount, NoOutput: true, ErrorBody: translate.AnthropicErrorBody,
	})
}
