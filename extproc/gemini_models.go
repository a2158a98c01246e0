package extproc

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/tollgate-ai/tollgate/schema/gemini"
	"github.com/tollgate-ai/tollgate/translate"
)

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

// geminiModelOf is a model as models.list and models.get write it.
func geminiModelOf(id string) gemini.Model {
	return gemini.Model{
		Name: "models/" + id, BaseModelID: id, DisplayName: id,
		SupportedGenerationMethods: []string{translate.GeminiGenerate, translate.GeminiStream, translate.GeminiCount},
	}
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
				return errReply(errUnavailable())
			}
			return errReply(&translate.APIError{
				Status:  http.StatusNotFound,
				Message: "models/" + id + " is not found for API version " + version + ". Call ListModels to see the list of available models.",
			})
		}
	}
	return jsonReply(geminiModelOf(id))
}
