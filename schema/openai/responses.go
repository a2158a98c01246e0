package openai

import "encoding/json"

// The Responses API (POST /v1/responses): requests, the response object, its
// output items and the events of its SSE stream.

// ResponsesRequest is the part of a client's Responses request that a
// translator reads (model, stream, max_output_tokens and user are read by the
// processor's scan). Input is a string or an array of InputItem.
type ResponsesRequest struct {
	Input              json.RawMessage   `json:"input"`
	Instructions       json.RawMessage   `json:"instructions"`
	Tools              []ResponsesTool   `json:"tools"`
	ToolChoice         json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Temperature        *float64          `json:"temperature"`
	TopP               *float64          `json:"top_p"`
	Text               *ResponsesText    `json:"text"`
	Metadata           map[string]string `json:"metadata"`
	User               string            `json:"user"`
	Store              *bool             `json:"store"`
	PreviousResponseID string            `json:"previous_response_id"`
	Reasoning          json.RawMessage   `json:"reasoning"`
}

// ResponsesTool is a tool of a Responses request: a function tool carries its
// name, description and parameters at top level (not under "function"); the
// built-in tools (web_search, file_search, …) only a type.
type ResponsesTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ResponsesText is the text member: the output format.
type ResponsesText struct {
	Format *TextFormat `json:"format,omitempty"`
}

// TextFormat is text, json_object or json_schema (with Name, Schema, Strict).
type TextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// InputItem is one item of a Responses input: a message (Role, Content as a
// string or InputContent parts; Type "message" or absent), a function_call, a
// function_call_output or a reasoning item.
type InputItem struct {
	Type      string          `json:"type,omitempty"`
	ID        string          `json:"id,omitempty"`
	Role      string          `json:"role,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	Status    string          `json:"status,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Summary   json.RawMessage `json:"summary,omitempty"`
	// EncryptedContent of a reasoning item: for Anthropic, the signature of
	// the thinking block it carries.
	EncryptedContent string `json:"encrypted_content,omitempty"`
}

// InputContent is one content part of an input message: input_text,
// output_text (an earlier assistant turn), refusal or input_image.
type InputContent struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Refusal  string `json:"refusal,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// Response is the response object, as the gateway writes it (JSON replies,
// stored responses and the response of response.* events).
type Response struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	Status             string             `json:"status"`
	Error              *ResponseError     `json:"error"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Instructions       json.RawMessage    `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	Model              string             `json:"model"`
	Output             []OutputItem       `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Reasoning          json.RawMessage    `json:"reasoning"`
	Store              bool               `json:"store"`
	Temperature        *float64           `json:"temperature"`
	Text               ResponsesText      `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []ResponsesTool    `json:"tools"`
	TopP               *float64           `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *ResponsesUsage    `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

// ResponseError is the error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// IncompleteDetails says why a response is incomplete: max_output_tokens or
// content_filter.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// OutputItem is one item of a response's output: a message (Role, Content) or
// a function_call (CallID, Name, Arguments).
type OutputItem struct {
	Type      string           `json:"type"`
	ID        string           `json:"id"`
	Status    string           `json:"status,omitempty"`
	Role      string           `json:"role,omitempty"`
	Content   *[]OutputContent `json:"content,omitempty"` // a message's: never nil
	CallID    string           `json:"call_id,omitempty"`
	Name      string           `json:"name,omitempty"`
	Arguments *string          `json:"arguments,omitempty"`
	// Summary and EncryptedContent: a reasoning item's (summary never nil).
	Summary          *[]SummaryPart `json:"summary,omitempty"`
	EncryptedContent string         `json:"encrypted_content,omitempty"`
}

// SummaryPart is one part of a reasoning item's summary: summary_text.
type SummaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// OutputContent is one content part of an output message: output_text, with
// annotations and logprobs always present (empty).
type OutputContent struct {
	Type        string            `json:"type"`
	Text        string            `json:"text"`
	Annotations []json.RawMessage `json:"annotations"`
	Logprobs    []json.RawMessage `json:"logprobs"`
}

// ResponsesUsage is a response's usage: input tokens include the cached ones,
// output tokens the reasoning ones.
type ResponsesUsage struct {
	InputTokens         int64               `json:"input_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokens        int64               `json:"output_tokens"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
	TotalTokens         int64               `json:"total_tokens"`
}

// InputTokensDetails: cached_tokens were read from the prompt cache.
type InputTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// OutputTokensDetails: reasoning_tokens were spent on reasoning.
type OutputTokensDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// ResponseEvent is one event of a Responses SSE stream as the gateway writes
// it; which members are set depends on Type (event name = type):
//
//   - response.created, response.in_progress, response.completed,
//     response.incomplete, response.failed: Response;
//   - response.output_item.added / .done: OutputIndex, Item;
//   - response.content_part.added / .done: ItemID, OutputIndex,
//     ContentIndex, Part;
//   - response.output_text.delta: ItemID, OutputIndex, ContentIndex, Delta,
//     Logprobs; response.output_text.done: the same with Text;
//   - response.function_call_arguments.delta: ItemID, OutputIndex, Delta;
//     .done: ItemID, OutputIndex, Name, Arguments;
//   - error: Code, Message, Param.
type ResponseEvent struct {
	Type           string             `json:"type"`
	SequenceNumber int64              `json:"sequence_number"`
	Response       *Response          `json:"response,omitempty"`
	OutputIndex    *int               `json:"output_index,omitempty"`
	Item           *OutputItem        `json:"item,omitempty"`
	ItemID         string             `json:"item_id,omitempty"`
	ContentIndex   *int               `json:"content_index,omitempty"`
	Part           any                `json:"part,omitempty"` // *OutputContent or *SummaryPart
	SummaryIndex   *int               `json:"summary_index,omitempty"`
	Delta          *string            `json:"delta,omitempty"`
	Text           *string            `json:"text,omitempty"`
	Name           string             `json:"name,omitempty"`
	Arguments      *string            `json:"arguments,omitempty"`
	Logprobs       *[]json.RawMessage `json:"logprobs,omitempty"`
	Code           *string            `json:"code,omitempty"`
	Message        string             `json:"message,omitempty"`
	Param          *string            `json:"param,omitempty"`
}

// UpstreamChatUsage is the usage of a chat completion as a provider reports
// it, with the details the Responses usage carries over.
type UpstreamChatUsage struct {
	PromptTokens            int64                `json:"prompt_tokens"`
	CompletionTokens        int64                `json:"completion_tokens"`
	PromptTokensDetails     *PromptTokensDetails `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}
