package extproc

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/envoy"
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

// endpointTable is every client-facing route, in one table: exact paths
// (query string excluded), then the routes with path parameters (Prefix),
// tried in this order when no exact path matches. The Gemini API's model
// methods (/v1beta/models/{model}:{method}) are matched by
// geminiModelEndpoint. Adding an endpoint is adding a row here (and, for a
// new client API, a row per provider in translate/translators.go).
var endpointTable = []*endpoint{
	{Method: http.MethodPost, Path: "/v1/chat/completions", API: translate.APIChat},
	{Method: http.MethodPost, Path: "/v1/completions", API: translate.APICompletions},
	{Method: http.MethodPost, Path: "/v1/embeddings", API: translate.APIEmbeddings, NoOutput: true},
	{Method: http.MethodGet, Path: "/v1/models", Reply: modelsReply},
	// OpenAI's Responses API: natively where the upstream speaks it
	// (translate/responses_native.go), else translated to chat completions
	// (translate/responses_chat.go); stored responses and conversations are
	// answered by responsesapi/ (responses.go).
	{Method: http.MethodPost, Path: "/v1/responses", API: translate.APIResponses},
	{Path: "/v1/conversations", Reply: conversationReply},
	// Anthropic's Messages API, errors in Anthropic's shape; the key comes
	// in x-api-key or Authorization: Bearer (the processor reads both).
	{Method: http.MethodPost, Path: "/v1/messages", API: translate.APIMessages, ErrorBody: translate.AnthropicErrorBody},
	{
		Method: http.MethodPost, Path: "/v1/messages/count_tokens",
		API: translate.APIMessagesCount, NoOutput: true, ErrorBody: translate.AnthropicErrorBody,
	},
	// The Gemini API's models.list; its model methods are
	// geminiModelEndpoint's.
	{Method: http.MethodGet, Path: "/v1beta/models", Reply: geminiModelsReply, ErrorBody: translate.GeminiErrorBody, QueryKey: true},
	// The routes charged per unit (units.go), in the order of
	// docs/endpoints.md; the multipart ones are uploads the processor sees
	// the first bytes of (docs/envoy.md#multipart-uploads).
	unitEndpoint("/v1/images/generations", translate.APIImages, false),
	unitEndpoint("/v1/images/edits", translate.APIImageEdits, true),
	unitEndpoint("/v1/moderations", translate.APIModerations, false),
	unitEndpoint("/v1/audio/speech", translate.APISpeech, false),
	unitEndpoint("/v1/audio/transcriptions", translate.APITranscriptions, true),
	unitEndpoint("/v1/audio/translations", translate.APITranslations, true),
	unitEndpoint("/v1/rerank", translate.APIRerank, false),

	// GET /v1beta/models/{model}: the Gemini API's models.get (the same
	// under /v1/ with a Gemini key, see modelReply).
	{Method: http.MethodGet, Path: "/v1beta/models/", Prefix: true, Reply: geminiModelReply, ErrorBody: translate.GeminiErrorBody, QueryKey: true},
	// GET /v1/models/{id}: the model object of a model the key may use.
	{Path: "/v1/models/", Prefix: true, Reply: modelReply},
	// Pass-through routes (passthrough.go): /passthrough/PROVIDER_ID/REST.
	{Path: PassthroughPrefix, Prefix: true, API: translate.APIPassthrough, QueryKey: true},
	{Path: "/v1/conversations/", Prefix: true, Reply: conversationReply},
	{Path: "/v1/responses/", Prefix: true, Reply: storedResponseReply},
}

// The Gemini API is served at /v1beta/models/{model}:{method} and
// /v1/models/{model}:{method} (@google/genai calls /v1/ by default), for the
// methods generateContent, streamGenerateContent (SSE with alt=sse, else a
// JSON array streamed) and countTokens. The virtual key comes in
// x-goog-api-key or in ?key=; errors are Google's
// {"error":{"code","message","status"}}.
var (
	geminiGenerateEndpoint = geminiEndpoint(translate.GeminiGenerate, translate.APIGeminiGenerate, false)
	geminiStreamEndpoint   = geminiEndpoint(translate.GeminiStream, translate.APIGeminiGenerate, false)
	geminiCountEndpoint    = geminiEndpoint(translate.GeminiCount, translate.APIGeminiCount, true)
)

func geminiEndpoint(method string, api translate.API, noOutput bool) *endpoint {
	return &endpoint{
		Method: http.MethodPost, Path: "/v1beta/models/{model}:" + method, API: api, NoOutput: noOutput,
		ErrorBody: translate.GeminiErrorBody, Parse: translate.ParseGeminiRequest, QueryKey: true,
	}
}

// unitEndpoint is the row of a route charged per unit: a multipart upload
// is parsed from its first bytes (units.go), any other by
// translate.ParseUnitRequest.
func unitEndpoint(path string, api translate.API, multipart bool) *endpoint {
	ep := &endpoint{Method: http.MethodPost, Path: path, API: api, NoOutput: true, Multipart: multipart}
	if !multipart {
		ep.Parse = func(_ string, body []byte) (*translate.Inbound, error) {
			return translate.ParseUnitRequest(api, body)
		}
	}
	return ep
}

// endpoints indexes the table's exact paths; prefixEndpoints are its
// Prefix rows, in order.
var endpoints, prefixEndpoints = indexEndpoints(endpointTable)

func indexEndpoints(table []*endpoint) (map[string]*endpoint, []*endpoint) {
	exact, prefix := make(map[string]*endpoint, len(table)), []*endpoint(nil)
	for _, e := range table {
		if e.Prefix {
			prefix = append(prefix, e)
		} else {
			exact[e.Path] = e
		}
	}
	return exact, prefix
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

// geminiModelEndpoint is the endpoint of a Gemini API model path
// (/v1beta/models/{model}:{method}, /v1/models/{model}:{method}), nil for
// any other path.
func geminiModelEndpoint(path string) *endpoint {
	_, method, ok := translate.GeminiModelPath(path)
	if !ok {
		return nil
	}
	switch method {
	case translate.GeminiGenerate:
		return geminiGenerateEndpoint
	case translate.GeminiStream:
		return geminiStreamEndpoint
	case translate.GeminiCount:
		return geminiCountEndpoint
	}
	return nil
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

// modelAPI is the shape of the stream's model replies: Anthropic's when the
// client sent anthropic-version, else OpenAI's.
func (s *stream) modelAPI() translate.ModelAPI {
	if s.anthropicVersion != "" {
		return translate.ModelsAnthropic
	}
	return translate.ModelsOpenAI
}

// modelsReply lists the models the key may use (GET /v1/models), in
// OpenAI's list format (in Anthropic's when the client sent
// anthropic-version).
func modelsReply(ctx context.Context, s *stream) *apiReply {
	return s.modelList(ctx, s.modelAPI())
}

// geminiModelsReply lists the models the key may use, as the Gemini API's
// models.list does (GET /v1beta/models).
func geminiModelsReply(ctx context.Context, s *stream) *apiReply {
	return s.modelList(ctx, translate.ModelsGemini)
}

func (s *stream) modelList(ctx context.Context, api translate.ModelAPI) *apiReply {
	body, err := translate.ModelListBody(api, s.p.cat.Models(ctx, s.principal))
	return modelBodyReply(api, body, err)
}

// modelReply answers GET /v1/models/{id}: the model object of a model (or
// alias) the key may use; 404 model_not_found otherwise, as OpenAI answers
// for a model the account cannot see. With anthropic-version, Anthropic's
// shapes; with a Gemini key (@google/genai with apiVersion v1), models.get.
func modelReply(ctx context.Context, s *stream) *apiReply {
	if s.googleKey {
		return geminiModelReply(ctx, s)
	}
	api := s.modelAPI()
	path, _, _ := strings.Cut(s.path, "?")
	id, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/models/"))
	if s.method != http.MethodGet || err != nil || id == "" {
		return modelErrorReply(api, translate.ErrModelURL(api, s.method, path))
	}
	return s.modelGet(ctx, api, id, "")
}

// geminiModelReply answers the Gemini API's models.get
// (GET /v1beta/models/{model}): Google's 404 NOT_FOUND for a model the key
// may not use, so a key learns nothing of them.
func geminiModelReply(ctx context.Context, s *stream) *apiReply {
	api := translate.ModelsGemini
	path, _, _ := strings.Cut(s.path, "?")
	version, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/models/")
	id, err := url.PathUnescape(rest)
	id = strings.TrimPrefix(id, "models/")
	if err != nil || id == "" || strings.ContainsAny(id, "/:") {
		return modelErrorReply(api, translate.ErrModelURL(api, s.method, path))
	}
	return s.modelGet(ctx, api, id, version)
}

// modelGet is the model object of id in api's shape when the key may use it
// (listed, or an alias it resolves), else the API's 404 (version: the
// Gemini API's).
func (s *stream) modelGet(ctx context.Context, api translate.ModelAPI, id, version string) *apiReply {
	info := translate.ModelInfo{ID: id, OwnedBy: "tollgate"}
	found := false
	for _, m := range s.p.cat.Models(ctx, s.principal) {
		if m.ID == id {
			info, found = m, true
			break
		}
	}
	if !found { // an alias, or a model the key may not use
		if _, err := s.p.cat.Resolve(ctx, s.principal, id); err != nil {
			if !errors.Is(err, ErrModelNotFound) && !errors.Is(err, ErrModelNotAllowed) {
				return modelErrorReply(api, translate.ErrUnavailable())
			}
			return modelErrorReply(api, translate.ErrModelNotFound(api, id, version))
		}
	}
	body, err := translate.ModelBody(api, info)
	return modelBodyReply(api, body, err)
}

func modelErrorReply(api translate.ModelAPI, e *translate.APIError) *apiReply {
	return &apiReply{Status: e.Status, Body: translate.ModelErrorBody(api, e)}
}

// modelBodyReply is a model reply's body, or the 500 of one that could not be
// encoded.
func modelBodyReply(api translate.ModelAPI, body []byte, err error) *apiReply {
	if err != nil {
		return modelErrorReply(api, &translate.APIError{Status: http.StatusInternalServerError, Type: translate.TypeServer, Message: "internal error"})
	}
	return &apiReply{Status: http.StatusOK, Body: body}
}

// MCPAuthorizer refuses MCP requests (/mcp, /mcp/SERVER) at the edge:
// mcp.EdgeAuthorizer, which answers what the MCP service would (401, 404,
// the JSON-RPC error of a call the key's grants do not cover). On Envoy the
// /mcp route runs ext_proc on its request headers only (xds/mcp.go); the
// processor asks for the body when MCPHeaders needs it. It never admits
// nor settles: the MCP service behind does, once.
type MCPAuthorizer interface {
	// MCPHeaders decides from the method, path and headers: a refusal
	// (status != 0), or needBody, or neither: the request goes on.
	MCPHeaders(ctx context.Context, r *http.Request) (status int, header http.Header, body []byte, needBody bool)
	// MCPBody decides from the JSON-RPC body: a refusal (status != 0), or
	// the request goes on.
	MCPBody(ctx context.Context, r *http.Request, body []byte) (status int, header http.Header, reply []byte)
}

// WithMCP makes the processor authorize MCP requests with a (nil: none;
// they are unknown URLs, 404).
func WithMCP(a MCPAuthorizer) Option { return func(p *Processor) { p.mcp = a } }

// replyMCPBody continues an MCP request's headers and asks for its body,
// BUFFERED (Envoy answers 413 above the listener's buffer limit). The
// override merges into the filter-level mode, not the route's (R2.7), so it
// turns the response direction off again as the route has it: the MCP
// service's replies (JSON or SSE) never pass through the processor.
var replyMCPBody = &extprocv3.ProcessingResponse{
	Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}},
	ModeOverride: &extprocfilterv3.ProcessingMode{
		RequestBodyMode:     extprocfilterv3.ProcessingMode_BUFFERED,
		ResponseHeaderMode:  extprocfilterv3.ProcessingMode_SKIP,
		ResponseBodyMode:    extprocfilterv3.ProcessingMode_NONE,
		ResponseTrailerMode: extprocfilterv3.ProcessingMode_SKIP,
	},
}

// mcpHeaders decides an MCP request at its headers; nil when the path is
// not the MCP gateway's (or no authorizer is set).
func (s *stream) mcpHeaders(ctx context.Context, h *extprocv3.HttpHeaders) *extprocv3.ProcessingResponse {
	path, _, _ := strings.Cut(s.path, "?")
	if s.p.mcp == nil || (path != envoy.MCPPath && !strings.HasPrefix(path, envoy.MCPPath+"/")) {
		return nil
	}
	r, err := http.NewRequestWithContext(ctx, s.method, s.path, http.NoBody)
	if err != nil {
		return nil
	}
	for _, hv := range h.GetHeaders().GetHeaders() {
		if k := hv.GetKey(); k == ":authority" {
			r.Host = headerValue(hv) // the MCP Host check
		} else if k != "" && k[0] != ':' {
			r.Header.Add(k, headerValue(hv))
		}
	}
	s.mcpReq = r
	status, hdr, body, needBody := s.p.mcp.MCPHeaders(ctx, r)
	switch {
	case status != 0:
		return s.mcpReply(status, hdr, body)
	case needBody && !h.GetEndOfStream():
		return replyMCPBody
	}
	return replyContinueRequestHeaders
}

// mcpBody decides an MCP request at its body.
func (s *stream) mcpBody(ctx context.Context, b *extprocv3.HttpBody) *extprocv3.ProcessingResponse {
	if status, hdr, reply := s.p.mcp.MCPBody(ctx, s.mcpReq, b.GetBody()); status != 0 {
		return s.mcpReply(status, hdr, reply)
	}
	return replyContinueRequestBody
}

// mcpReply answers an MCP request with the authorizer's refusal.
func (s *stream) mcpReply(status int, hdr http.Header, body []byte) *extprocv3.ProcessingResponse {
	var headers [][2]string
	for k, vs := range hdr {
		if !strings.EqualFold(k, hdrContentType) { // immediate sets it
			for _, v := range vs {
				headers = append(headers, [2]string{strings.ToLower(k), v})
			}
		}
	}
	return s.immediate(status, body, headers)
}
