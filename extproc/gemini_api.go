package extproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/translate"
)

// The Gemini API is served at /v1beta/models/{model}:{method} and
// /v1/models/{model}:{method} (@google/genai calls /v1/ by default), for the
// methods generateContent, streamGenerateContent (SSE with alt=sse, else a
// JSON array streamed) and countTokens, plus GET /v1beta/models. The virtual
// key comes in x-goog-api-key (as @google/genai and gemini-cli send it) or
// in ?key=; errors are Google's {"error":{"code","message","status"}}.
var (
	geminiGenerateEndpoint = &endpoint{
		Method: http.MethodPost, Path: "/v1beta/models/{model}:generateContent", API: translate.APIGeminiGenerate,
		ErrorBody: translate.GeminiErrorBody, Parse: translate.ParseGeminiRequest, QueryKey: true,
	}
	geminiStreamEndpoint = &endpoint{
		Method: http.MethodPost, Path: "/v1beta/models/{model}:streamGenerateContent", API: translate.APIGeminiGenerate,
		ErrorBody: translate.GeminiErrorBody, Parse: translate.ParseGeminiRequest, QueryKey: true,
	}
	geminiCountEndpoint = &endpoint{
		Method: http.MethodPost, Path: "/v1beta/models/{model}:countTokens", API: translate.APIGeminiCount, NoOutput: true,
		ErrorBody: translate.GeminiErrorBody, Parse: translate.ParseGeminiRequest, QueryKey: true,
	}
)

func init() {
	registerEndpoint(&endpoint{
		Method: http.MethodGet, Path: "/v1beta/models", Reply: geminiModelsReply,
		ErrorBody: translate.GeminiErrorBody, QueryKey: true,
	})
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

// geminiModelsReply lists the models the key may use, as models.list does.
func geminiModelsReply(ctx context.Context, s *stream) *apiReply {
	models := s.p.cat.Models(ctx, s.principal)
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	body, err := translate.GeminiModelsBody(ids)
	if err != nil {
		return &apiReply{Status: http.StatusInternalServerError, Body: translate.GeminiErrorBody(&translate.APIError{Status: 500, Message: "internal error"})}
	}
	return &apiReply{Status: http.StatusOK, Body: body}
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

// GET /v1beta/models/{model} (models.get of the Gemini API; the same under
// /v1/ when the key came in x-goog-api-key, see modelReply): the model
// object of a model (or alias) the key may use, as models.list lists it;
// Google's 404 NOT_FOUND otherwise, so a key learns nothing of the models it
// may not use.
func init() {
	registerEndpoint(&endpoint{
		Method: http.MethodGet, Path: "/v1beta/models/", Prefix: true, Reply: geminiModelReply,
		ErrorBody: translate.GeminiErrorBody, QueryKey: true,
	})
}

// geminiModelReply answers models.get.
func geminiModelReply(ctx context.Context, s *stream) *apiReply {
	errReply := func(e *translate.APIError) *apiReply {
		return &apiReply{Status: e.Status, Body: translate.GeminiErrorBody(e)}
	}
	path, _, _ := strings.Cut(s.path, "?")
	version, rest, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/models/")
	id, err := url.PathUnescape(rest)
	id = strings.TrimPrefix(id, "models/")
	if err != nil || id == "" || strings.ContainsAny(id, "/:") {
		return errReply(&translate.APIError{Status: http.StatusNotFound, Message: "Invalid URL (" + s.method + " " + path + ")"})
	}
	known := false
	for _, m := range s.p.cat.Models(ctx, s.principal) {
		if known = m.ID == id; known {
			break
		}
	}
	if !known { // an alias, or a model the key may not use
		if _, err := s.p.cat.Resolve(ctx, s.principal, id); err != nil {
			if !errors.Is(err, ErrModelNotFound) && !errors.Is(err, ErrModelNotAllowed) {
				return errReply(translate.ErrUnavailable())
			}
			return errReply(&translate.APIError{
				Status:  http.StatusNotFound,
				Message: "models/" + id + " is not found for API version " + version + ". Call ListModels to see the list of available models.",
			})
		}
	}
	body, err := translate.GeminiModelBody(id)
	if err != nil {
		return internalErrorReply()
	}
	return &apiReply{Status: http.StatusOK, Body: body}
}

// GET /v1/models/{id}: the model object of a model (or alias) the key may use;
// 404 model_not_found otherwise, as OpenAI answers for a model the account
// cannot see. With anthropic-version, Anthropic's shapes.
func init() {
	registerEndpoint(&endpoint{Path: "/v1/models/", Prefix: true, Reply: modelReply})
}

// anthropicModel is a model in Anthropic's models API.
type anthropicModel struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

// anthropicModelList is Anthropic's list page: the whole list in one page.
type anthropicModelList struct {
	Data    []anthropicModel `json:"data"`
	HasMore bool             `json:"has_more"`
	FirstID *string          `json:"first_id"`
	LastID  *string          `json:"last_id"`
}

func anthropicModelOf(m ModelInfo) anthropicModel {
	created := m.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	return anthropicModel{Type: "model", ID: m.ID, DisplayName: m.ID, CreatedAt: created.UTC().Format(time.RFC3339)}
}

// anthropicModelsReply is the list in Anthropic's shape, sorted by id.
func anthropicModelsReply(models []ModelInfo) *apiReply {
	list := anthropicModelList{Data: make([]anthropicModel, 0, len(models))}
	for _, m := range models {
		list.Data = append(list.Data, anthropicModelOf(m))
	}
	if n := len(list.Data); n > 0 {
		list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[n-1].ID
	}
	return jsonReply(list)
}

func jsonReply(v any) *apiReply {
	body, err := json.Marshal(v)
	if err != nil {
		return internalErrorReply()
	}
	return &apiReply{Status: http.StatusOK, Body: body}
}

// internalErrorReply is the 500 of a reply that could not be encoded.
func internalErrorReply() *apiReply {
	return &apiReply{Status: http.StatusInternalServerError, Body: (&translate.APIError{Status: 500, Type: translate.TypeServer, Message: "internal error"}).OpenAIBody()}
}

// modelReply answers GET /v1/models/{id}.
func modelReply(ctx context.Context, s *stream) *apiReply {
	if s.googleKey { // a Gemini API client (@google/genai with apiVersion v1)
		return geminiModelReply(ctx, s)
	}
	errBody := func(e *translate.APIError) *apiReply {
		if s.anthropicVersion != "" {
			return &apiReply{Status: e.Status, Body: translate.AnthropicErrorBody(e)}
		}
		return &apiReply{Status: e.Status, Body: e.OpenAIBody()}
	}
	path, _, _ := strings.Cut(s.path, "?")
	id, err := url.PathUnescape(strings.TrimPrefix(path, "/v1/models/"))
	if s.method != http.MethodGet || err != nil || id == "" {
		return errBody(&translate.APIError{
			Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: translate.CodeUnknownURL,
			Message: fmt.Sprintf("Invalid URL (%s %s)", s.method, path),
		})
	}
	info := ModelInfo{ID: id, OwnedBy: "tollgate"}
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
				return errBody(translate.ErrUnavailable())
			}
			return errBody(&translate.APIError{
				Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: translate.CodeModelNotFound, Param: "model",
				Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", id),
			})
		}
	}
	if s.anthropicVersion != "" {
		return jsonReply(anthropicModelOf(info))
	}
	owned := info.OwnedBy
	if owned == "" {
		owned = "tollgate"
	}
	var created int64
	if !info.Created.IsZero() {
		created = info.Created.Unix()
	}
	return jsonReply(modelEntry{ID: info.ID, Object: "model", Created: created, OwnedBy: owned})
}
