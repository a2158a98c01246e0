package bedrock

import "encoding/json"

// CountTokensRequest is the body of CountTokens
// (POST /model/{modelId}/count-tokens): the input is the Converse request to
// count (Input.Converse) or an InvokeModel body (not used by the gateway).
type CountTokensRequest struct {
	Input CountTokensInput `json:"input"`
}

// CountTokensInput is a union: exactly one member is set.
type CountTokensInput struct {
	Converse *ConverseTokensRequest `json:"converse,omitempty"`
}

// ConverseTokensRequest is the part of a Converse request CountTokens reads.
type ConverseTokensRequest struct {
	Messages                     []Message       `json:"messages"`
	System                       []SystemBlock   `json:"system,omitempty"`
	ToolConfig                   *ToolConfig     `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields json.RawMessage `json:"additionalModelRequestFields,omitempty"`
}

// CountTokensResponse is CountTokens' reply.
type CountTokensResponse struct {
	InputTokens int64 `json:"inputTokens"`
}
