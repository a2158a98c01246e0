package translate

import (
	"encoding/json"
)

// claudeCount builds count_tokens of a Claude model on Vertex AI:
// POST {base}/publishers/anthropic/models/count-tokens:rawPredict with the
// count_tokens body of Anthropic's API plus anthropic_version
// vertex-2023-10-16; unlike rawPredict, the model stays in the body (the
// path names the count-tokens method, not a model). The reply is Anthropic's
// {"input_tokens":N} and passes unchanged; counting is free.
func (t *vertexTranslator) claudeCount(in *Inbound, target *Target) (*Outbound, error) {
	t.inner = &messagesAnthropic{count: true}
	out, err := t.inner.Request(in, target)
	if err != nil {
		return nil, err
	}
	if out.Body, err = vertexClaudeBody(out.Body, in.Body, nil); err != nil {
		return nil, err
	}
	out.Path = joinPath(target.BasePath, "/publishers/anthropic/models/count-tokens:rawPredict")
	out.Headers = nil // the bearer (Target.Signer) and the body's version
	out.Remove = append(out.Remove, HdrAnthropicVersion)
	return out, nil
}

// vertexClaudeBody makes an Anthropic body (the translated one, else the
// client's) Vertex's: anthropic_version added, and only the members keep
// reports kept (nil keeps them all).
func vertexClaudeBody(translated, client []byte, keep func(member string) bool) ([]byte, error) {
	body := translated
	if body == nil {
		body = client
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	for k := range req {
		if keep != nil && !keep(k) {
			delete(req, k)
		}
	}
	req["anthropic_version"], _ = json.Marshal(vertexAnthropicVersion)
	return json.Marshal(req)
}

// claudeCountMembers are the members of Anthropic's count_tokens body.
var claudeCountMembers = map[string]bool{
	"model": true, "messages": true, "system": true, "tools": true, "tool_choice": true, "thinking": true,
}

// claudeGeminiCount builds the Gemini API's countTokens of a Claude model:
// the Messages request generateContent would send, cut to count_tokens'
// members, to count-tokens:rawPredict; the reply becomes
// {"totalTokens":N}.
func (t *vertexTranslator) claudeGeminiCount(in *Inbound, target *Target) (*Outbound, error) {
	gen, err := geminiCountAsGenerate(in)
	if err != nil {
		return nil, err
	}
	out, err := new(generateAnthropic).Request(gen, target)
	if err != nil {
		return nil, err
	}
	if out.Body, err = vertexClaudeBody(out.Body, nil, func(m string) bool { return claudeCountMembers[m] }); err != nil {
		return nil, err
	}
	t.inner = countReplyGemini{readError: func(status int, body []byte) *APIError {
		return upstreamAnthropicError(status, body, "")
	}}
	out.Path = joinPath(target.BasePath, "/publishers/anthropic/models/count-tokens:rawPredict")
	out.Headers = nil
	out.Remove = append(out.Remove, HdrAnthropicVersion)
	return out, nil
}
