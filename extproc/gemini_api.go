package extproc

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// Client APIs of Google's Gemini API.
const (
	// APIGeminiGenerate is POST /v1beta/models/{model}:generateContent and
	// :streamGenerateContent (and the same under /v1/).
	APIGeminiGenerate API = "gemini.generate_content"
	// APIGeminiCount is POST /v1beta/models/{model}:countTokens.
	APIGeminiCount API = "gemini.count_tokens"
)

// The Gemini API is served at /v1beta/models/{model}:{method} and
// /v1/models/{model}:{method} (@google/genai calls /v1/ by default), for the
// methods generateContent, streamGenerateContent (SSE with alt=sse, else a
// JSON array streamed) and countTokens, plus GET /v1beta/models. The virtual
// key comes in x-goog-api-key (as @google/genai and gemini-cli send it) or
// in ?key=; errors are Google's {"error":{"code","message","status"}}.
var (
	geminiGenerateEndpoint = &endpoint{
		Method: http.MethodPost, Path: "/v1beta/models/{model}:generateContent", API: APIGeminiGenerate,
		ErrorBody: geminiErrorBody, Parse: parseGeminiRequest, QueryKey: true,
	}
	geminiStreamEndpoint = &endpoint{
		Method: http.MethodPost, Path: "/v1beta/models/{model}:streamGenerateContent", API: APIGeminiGenerate,
		ErrorBody: geminiErrorBody, Parse: parseGeminiRequest, QueryKey: true,
	}
	geminiCountEndpoint = &endpoint{
		Method: http.MethodPost, Path: "/v1beta/models/{model}:countTokens", API: APIGeminiCount, NoOutput: true,
		ErrorBody: geminiErrorBody, Parse: parseGeminiRequest, QueryKey: true,
	}
)

func init() {
	registerEndpoint(&endpoint{
		Method: http.MethodGet, Path: "/v1beta/models", Reply: geminiModelsReply,
		ErrorBody: geminiErrorBody, QueryKey: true,
	})
}

// geminiModelEndpoint is the endpoint of a Gemini API model path
// (/v1beta/models/{model}:{method}, /v1/models/{model}:{method}), nil for
// any other path.
func geminiModelEndpoint(path string) *endpoint {
	_, method, ok := geminiModelPath(path)
	if !ok {
		return nil
	}
	switch method {
	case geminiGenerate:
		return geminiGenerateEndpoint
	case geminiStream:
		return geminiStreamEndpoint
	case geminiCount:
		return geminiCountEndpoint
	}
	return nil
}

// geminiModelPath splits a Gemini API model path (query excluded) into its
// model (unescaped) and method.
func geminiModelPath(path string) (model, method string, ok bool) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/models/"); !ok {
			return "", "", false
		}
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || strings.IndexByte(rest[:i], '/') >= 0 {
		return "", "", false
	}
	m, err := url.PathUnescape(rest[:i])
	if err != nil || m == "" {
		return "", "", false
	}
	return m, rest[i+1:], true
}

// queryKey is the key= parameter of a :path ("" when absent).
func queryKey(path string) string {
	_, q, ok := strings.Cut(path, "?")
	if !ok {
		return ""
	}
	v, err := url.ParseQuery(q)
	if err != nil {
		return ""
	}
	return v.Get("key")
}

// geminiSSE reports whether the client's :path asks for SSE (alt=sse).
func geminiSSE(path string) bool {
	_, q, _ := strings.Cut(path, "?")
	v, _ := url.ParseQuery(q)
	return v.Get("alt") == "sse"
}

// parseGeminiRequest reads a Gemini API request: the model and the method
// from the path, max tokens from generationConfig.maxOutputTokens; the body
// is validated like every other (one scan, JSON errors located).
func parseGeminiRequest(path string, body []byte) (*Inbound, error) {
	in, err := parseRequest(APIGeminiGenerate, body)
	if err != nil {
		return nil, err
	}
	model, method, ok := geminiModelPath(path)
	if !ok {
		return nil, &fieldError{"model", "the path names no model"}
	}
	in.Path, in.Model, in.Stream, in.MaxTokens = path, model, method == geminiStream, 0
	in.User, in.IncludeUsage = "", false
	if method == geminiCount {
		in.API = APIGeminiCount
		return in, nil
	}
	v, err := topLevelMember(body, "generationConfig")
	if err != nil || !v.isObject(body) {
		return in, nil //nolint:nilerr // a body without generationConfig
	}
	_, err = scanObject(body, v.start, false, func(key []byte, v span) error {
		if keyIs(key, "maxOutputTokens") && !v.isNull(body) {
			n, ok := intValue(body, v)
			if !ok {
				return &fieldError{"generationConfig.maxOutputTokens", "must be a non-negative integer"}
			}
			in.MaxTokens = n
		}
		return nil
	})
	return in, err
}

// geminiModelsReply lists the models the key may use, as models.list does.
func geminiModelsReply(ctx context.Context, s *stream) *apiReply {
	models := s.p.cat.Models(ctx, s.principal)
	list := gemini.ListModelsResponse{Models: make([]gemini.Model, 0, len(models))}
	for _, m := range models {
		list.Models = append(list.Models, geminiModelOf(m.ID))
	}
	slices.SortFunc(list.Models, func(a, b gemini.Model) int { return strings.Compare(a.Name, b.Name) })
	body, err := json.Marshal(list)
	if err != nil {
		return &apiReply{Status: http.StatusInternalServerError, Body: geminiErrorBody(&apiError{Status: 500, Message: "internal error"})}
	}
	return &apiReply{Status: http.StatusOK, Body: body}
}

// streamContentTyper is implemented by translators whose client stream is
// not SSE (the Gemini API's JSON array): the processor sets the content type
// of a streamed 2xx reply to it ("" keeps the provider's).
type streamContentTyper interface {
	streamContentType() string
}

// redactQueryKey hides the value of a key= query parameter of a :path (the
// Gemini API's key in the URL) for logs.
func redactQueryKey(path string) string {
	p, q, ok := strings.Cut(path, "?")
	if !ok || !strings.Contains(q, "key=") {
		return path
	}
	params := strings.Split(q, "&")
	for i, kv := range params {
		if strings.HasPrefix(kv, "key=") {
			params[i] = "key=[redacted]"
		}
	}
	return p + "?" + strings.Join(params, "&")
}
