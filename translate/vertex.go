package translate

import (
	"net/url"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
)

// ProviderVertex is Google Cloud's Vertex AI: Gemini models on
// {base}/publishers/google/models/{m}:generateContent (the Gemini API's
// bodies) and Anthropic's Claude models on
// {base}/publishers/anthropic/models/{m}:rawPredict and :streamRawPredict
// (the Messages API's bodies without "model", with anthropic_version
// vertex-2023-10-16). The base URL names the project and location
// (https://{location}-aiplatform.googleapis.com/v1/projects/{p}/locations/{l});
// an OAuth2 access token is set by the deployment's Target.Signer.
const ProviderVertex ProviderType = "vertex"

// vertexAnthropicVersion is the anthropic_version Vertex AI requires in the
// body of Claude requests.
const vertexAnthropicVersion = "vertex-2023-10-16"

// vertexTranslator serves a client API from a Vertex AI deployment: the
// translator of the model's publisher (Gemini's for Google models, the
// Anthropic one for Claude models, chosen by the model id) does the work;
// for Claude the request is then made Vertex's (model in the path, not the
// body; anthropic_version in the body; no x-api-key). count_tokens and the
// Gemini API's countTokens of Claude models are Vertex's
// count-tokens:rawPredict (vertex_count.go).
type vertexTranslator struct {
	api   API
	inner Translator
}

var _ Translator = (*vertexTranslator)(nil)

// vertexClaude reports whether a Vertex model id is one of Anthropic's.
func vertexClaude(model string) bool { return strings.HasPrefix(model, "claude") }

// Request picks the publisher's translator and builds the request.
func (t *vertexTranslator) Request(in *Inbound, target *Target) (*Outbound, error) {
	model := target.ProviderModel
	if model == "" {
		model = in.Model
	}
	if !vertexClaude(model) {
		t.inner = NewTranslator(t.api, ProviderGemini)
		return t.inner.Request(in, target)
	}
	switch t.api {
	case APIMessagesCount:
		return t.claudeCount(in, target)
	case APIGeminiCount:
		return t.claudeGeminiCount(in, target)
	}
	t.inner = NewTranslator(t.api, ProviderAnthropic)
	out, err := t.inner.Request(in, target)
	if err != nil {
		return nil, err
	}
	if out.Body, err = vertexClaudeBody(out.Body, in.Body, func(m string) bool { return m != "model" }); err != nil {
		return nil, err
	}
	method := ":rawPredict"
	if in.Stream {
		method = ":streamRawPredict"
	}
	out.Path = joinPath(target.BasePath, "/publishers/anthropic/models/"+url.PathEscape(model)+method)
	out.Headers = nil // no x-api-key, no anthropic-version header: Vertex's are the bearer and the body's version
	out.Remove = append(out.Remove, HdrAnthropicVersion)
	return out, nil
}

// Response is the publisher translator's.
func (t *vertexTranslator) Response(body []byte) ([]byte, kernel.Usage, error) {
	return t.inner.Response(body)
}

// StreamChunk is the publisher translator's.
func (t *vertexTranslator) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	return t.inner.StreamChunk(chunk, eos)
}

// StreamUsage is the publisher translator's.
func (t *vertexTranslator) StreamUsage() (kernel.Usage, bool) { return t.inner.StreamUsage() }

// Error renders a Vertex error (Google's shape, which every translator's
// error reading understands) in the client's shape.
func (t *vertexTranslator) Error(status int, body []byte) []byte {
	if t.inner == nil {
		return upstreamGeminiError(status, body, "").OpenAIBody()
	}
	return t.inner.Error(status, body)
}

func (t *vertexTranslator) StreamContentType() string {
	if ct, ok := t.inner.(StreamContentTyper); ok {
		return ct.StreamContentType()
	}
	return ""
}
