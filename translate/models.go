package translate

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The model list and model object replies (GET /v1/models, /v1/models/{id},
// /v1beta/models, /v1beta/models/{id}), one shape per client API: OpenAI's,
// Anthropic's (when the client sends anthropic-version) and the Gemini
// API's. The processor finds which models a key may see; the shapes and
// their errors are here.

// ModelInfo is a model (group) a key may use, as the model lists show it.
type ModelInfo struct {
	ID      string
	OwnedBy string
	Created time.Time
}

// ModelAPI is the client API whose shapes a model reply takes.
type ModelAPI uint8

const (
	ModelsOpenAI ModelAPI = iota
	ModelsAnthropic
	ModelsGemini
)

// openAIModel is a model in OpenAI's models API.
type openAIModel struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

type openAIModelList struct {
	Object string        `json:"object"`
	Data   []openAIModel `json:"data"`
}

func openAIModelOf(m ModelInfo) openAIModel {
	owned := m.OwnedBy
	if owned == "" {
		owned = "tollgate"
	}
	var created int64
	if !m.Created.IsZero() {
		created = m.Created.Unix()
	}
	return openAIModel{ID: m.ID, Object: "model", Created: created, OwnedBy: owned}
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

// ModelListBody is the list of models in api's shape: OpenAI's sorted by
// id, Anthropic's in the catalog's order, the Gemini API's models.list
// sorted by name.
func ModelListBody(api ModelAPI, models []ModelInfo) ([]byte, error) {
	switch api {
	case ModelsAnthropic:
		list := anthropicModelList{Data: make([]anthropicModel, 0, len(models))}
		for _, m := range models {
			list.Data = append(list.Data, anthropicModelOf(m))
		}
		if n := len(list.Data); n > 0 {
			list.FirstID, list.LastID = &list.Data[0].ID, &list.Data[n-1].ID
		}
		return json.Marshal(list)
	case ModelsGemini:
		ids := make([]string, len(models))
		for i, m := range models {
			ids[i] = m.ID
		}
		return GeminiModelsBody(ids)
	default:
		list := openAIModelList{Object: "list", Data: make([]openAIModel, 0, len(models))}
		for _, m := range models {
			list.Data = append(list.Data, openAIModelOf(m))
		}
		slices.SortFunc(list.Data, func(a, b openAIModel) int { return strings.Compare(a.ID, b.ID) })
		return json.Marshal(list)
	}
}

// ModelBody is the model object of m in api's shape.
func ModelBody(api ModelAPI, m ModelInfo) ([]byte, error) {
	switch api {
	case ModelsAnthropic:
		return json.Marshal(anthropicModelOf(m))
	case ModelsGemini:
		return GeminiModelBody(m.ID)
	default:
		return json.Marshal(openAIModelOf(m))
	}
}

// ModelErrorBody is e in api's error shape.
func ModelErrorBody(api ModelAPI, e *APIError) []byte {
	switch api {
	case ModelsAnthropic:
		return AnthropicErrorBody(e)
	case ModelsGemini:
		return GeminiErrorBody(e)
	default:
		return e.OpenAIBody()
	}
}

// ErrModelURL is the 404 of a models path that names no model (method and
// path: the request's, without its query).
func ErrModelURL(api ModelAPI, method, path string) *APIError {
	e := &APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("Invalid URL (%s %s)", method, path)}
	if api != ModelsGemini {
		e.Type, e.Code = TypeInvalidRequest, CodeUnknownURL
	}
	return e
}

// ErrModelNotFound is the 404 of a model the key may not see (unknown, or
// not allowed: a key learns nothing of the models it may not use), as each
// API words it (version: the Gemini API's, v1beta or v1).
func ErrModelNotFound(api ModelAPI, id, version string) *APIError {
	if api == ModelsGemini {
		return &APIError{
			Status:  http.StatusNotFound,
			Message: "models/" + id + " is not found for API version " + version + ". Call ListModels to see the list of available models.",
		}
	}
	return &APIError{
		Status: http.StatusNotFound, Type: TypeInvalidRequest, Code: CodeModelNotFound, Param: "model",
		Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", id),
	}
}
