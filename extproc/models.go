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
				return errBody(errUnavailable())
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
