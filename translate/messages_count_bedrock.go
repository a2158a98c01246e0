package translate

import (
	"encoding/json"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/bedrock"
)

// countTokensBedrock serves Anthropic's count_tokens from a Bedrock
// deployment of a Claude model with CountTokens
// (POST /model/{modelId}/count-tokens): the request is the Converse request
// messagesBedrock builds (messages, system, toolConfig, thinking), without
// its inferenceConfig; the reply's inputTokens becomes input_tokens. It is
// free: it settles at zero usage. CountTokens takes the bare foundation
// model id, so a cross-region inference profile ("us.anthropic.…") is
// counted on its model. Models Bedrock cannot count (every family but
// Anthropic's) get the gateway's estimate.
type countTokensBedrock struct{ messagesBedrock }

var _ Translator = (*countTokensBedrock)(nil)

// bedrockCountModel is the model id CountTokens takes for a deployment's
// model, and whether Bedrock counts its tokens.
func bedrockCountModel(model string) (string, bool) {
	if i := strings.Index(model, "anthropic."); i >= 0 && !strings.Contains(model[:i], "/") {
		return model[i:], true // "us.anthropic.…", "global.anthropic.…" → "anthropic.…"
	}
	return model, false
}

// Request builds the CountTokens request, or answers the estimate.
func (t *countTokensBedrock) Request(in *Inbound, target *Target) (*Outbound, error) {
	model := target.ProviderModel
	if model == "" {
		model = in.Model
	}
	model, ok := bedrockCountModel(model)
	if !ok {
		return countTokensEstimate{}.Request(in, target)
	}
	conv, err := t.messagesBedrock.Request(in, target)
	if err != nil {
		return nil, err
	}
	return bedrockCountRequest(conv, target, model)
}

// bedrockCountRequest makes a Converse request (conv) the CountTokens
// request of model.
func bedrockCountRequest(conv *Outbound, target *Target, model string) (*Outbound, error) {
	var req bedrock.ConverseRequest
	if err := json.Unmarshal(conv.Body, &req); err != nil {
		return nil, err
	}
	body, err := json.Marshal(bedrock.CountTokensRequest{Input: bedrock.CountTokensInput{Converse: &bedrock.ConverseTokensRequest{
		Messages: req.Messages, System: req.System, ToolConfig: req.ToolConfig,
		AdditionalModelRequestFields: req.AdditionalModelRequestFields,
	}}})
	if err != nil {
		return nil, err
	}
	return &Outbound{
		Path: joinPath(target.BasePath, "/model/"+awsEscape(model)+"/count-tokens"),
		Body: body, Remove: conv.Remove,
	}, nil
}

// geminiCountBedrock serves the Gemini API's countTokens from a Bedrock
// deployment: for Claude, CountTokens of the Converse request
// generateContent would send, answered as {"totalTokens":N} (free); for
// the models Bedrock cannot count, the gateway's estimate.
type geminiCountBedrock struct {
	countReplyGemini
}

var _ Translator = (*geminiCountBedrock)(nil)

// Request builds the CountTokens request, or answers the estimate.
func (t *geminiCountBedrock) Request(in *Inbound, target *Target) (*Outbound, error) {
	model := target.ProviderModel
	if model == "" {
		model = in.Model
	}
	model, ok := bedrockCountModel(model)
	if !ok {
		return geminiCountEstimate{}.Request(in, target)
	}
	gen, err := geminiCountAsGenerate(in)
	if err != nil {
		return nil, err
	}
	conv, err := new(generateBedrock).Request(gen, target)
	if err != nil {
		return nil, err
	}
	t.readError = func(status int, body []byte) *APIError { return upstreamBedrockError(status, body, "") }
	return bedrockCountRequest(conv, target, model)
}

// Response answers {"input_tokens":N}; counting is free (zero usage).
func (t *countTokensBedrock) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r bedrock.CountTokensResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	out, err := json.Marshal(struct {
		InputTokens int64 `json:"input_tokens"`
	}{r.InputTokens})
	return out, kernel.Usage{}, err
}

// StreamChunk is not reached: count_tokens does not stream.
func (t *countTokensBedrock) StreamChunk(chunk []byte, _ bool) ([]byte, error) { return chunk, nil }

// StreamUsage is zero: counting tokens is free.
func (t *countTokensBedrock) StreamUsage() (kernel.Usage, bool) { return kernel.Usage{}, true }
