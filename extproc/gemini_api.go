package extproc

import (
	"net/http"

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

// GET /v1/models/{id}: the model object of a model (or alias) the key may use;
// 404 model_not_found otherwise, as OpenAI answers for a model the account
// cannot see. With anthropic-version, Anthropic's shapes.
func init() {
	registerEndpoint(&endpoint{Path: "/v1/models/", Prefix: true, Reply: modelReply})
}
