package extproc

import (
	"net/http"
)

// OpenAI's Responses API is served at POST /v1/responses: natively where the
// upstream speaks it (responses_native.go), else translated to chat
// completions, for Anthropic through the chat → Messages translator
// (responses_chat.go).
func init() {
	registerEndpoint(&endpoint{Method: http.MethodPost, Path: "/v1/responses", API: APIResponses})
}

// responsesOpenAI serves the Responses API from an OpenAI-compatible
// deployment: natively when the provider declares the Responses API
// (Target.NativeResponses; OpenAI itself, vLLM), else through its chat
// completions API.
type responsesOpenAI struct {
	Translator
}

// Request picks the way (once, see chatPath) and builds the upstream request.
func (t *responsesOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.chatPath(target)
	return t.Translator.Request(in, target)
}
