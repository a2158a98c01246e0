package openai

import "encoding/json"

// ChatRequest is the part of a client's chat completions request that a
// translator reads (model, stream, max tokens and user are read by the
// processor's scan, not here).
type ChatRequest struct {
	Messages          []ChatMessage   `json:"messages"`
	Temperature       *float64        `json:"temperature"`
	TopP              *float64        `json:"top_p"`
	Stop              json.RawMessage `json:"stop"`
	Tools             []Tool          `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls *bool           `json:"parallel_tool_calls"`
	N                 *int            `json:"n"`
	ResponseFormat    *ResponseFormat `json:"response_format"`
	ReasoningEffort   string          `json:"reasoning_effort"`
}

// ResponseFormat is a chat request's response_format: text, json_object, or
// json_schema with its schema.
type ResponseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
	} `json:"json_schema"`
}

// ThinkingBlock is an Anthropic thinking block carried in a chat message
// (thinking_blocks, as LiteLLM names it) so that its signature makes the
// round trip to the next request.
type ThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature,omitempty"`
}

// ChatMessage is one message of a client's chat request; Content is a string,
// an array of ChatContentPart or null.
type ChatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ToolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// ThinkingBlocks: an assistant turn's earlier thinking, replayed.
	ThinkingBlocks []ThinkingBlock `json:"thinking_blocks"`
}

// ChatContentPart is one part of a client's message content (text or
// image_url).
type ChatContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text"`
	ImageURL *ImageURL `json:"image_url"`
}

// ImageURL is the image_url member of an image content part.
type ImageURL struct {
	URL string `json:"url"`
}

// ToolCall is a tool call of a chat message, read from requests and
// responses and written to them.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function a ToolCall calls, its arguments a JSON text.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function tool of a chat request.
type Tool struct {
	Type     string             `json:"type"`
	Function FunctionDefinition `json:"function"`
}

// FunctionDefinition declares a function tool: its parameters are a JSON
// schema.
type FunctionDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Usage is a chat completion's usage as the gateway writes it.
type Usage struct {
	PromptTokens        int64               `json:"prompt_tokens"`
	CompletionTokens    int64               `json:"completion_tokens"`
	TotalTokens         int64               `json:"total_tokens"`
	PromptTokensDetails PromptTokensDetails `json:"prompt_tokens_details"`
}

// PromptTokensDetails splits the prompt tokens: cached_tokens were read from
// the provider's prompt cache.
type PromptTokensDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// ChatReplyMessage is the assistant message of a chat completion the gateway
// writes.
type ChatReplyMessage struct {
	Role    string  `json:"role"`
	Content *string `json:"content"`
	// ReasoningContent carries reasoning (Anthropic's thinking blocks), as
	// DeepSeek and vLLM name it in chat completions.
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ThinkingBlocks   []ThinkingBlock `json:"thinking_blocks,omitempty"`
	ToolCalls        []ToolCall      `json:"tool_calls,omitempty"`
}

// ChatChoice is one choice of a chat completion the gateway writes.
type ChatChoice struct {
	Index        int              `json:"index"`
	Message      ChatReplyMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
}

// ChatCompletion is a complete chat completion the gateway writes.
type ChatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   Usage        `json:"usage"`
}

// UpstreamChatRequest is a chat completions request the gateway writes to an
// OpenAI-compatible provider.
type UpstreamChatRequest struct {
	Model               string                `json:"model"`
	Messages            []UpstreamChatMessage `json:"messages"`
	MaxCompletionTokens int64                 `json:"max_completion_tokens,omitempty"`
	Temperature         *float64              `json:"temperature,omitempty"`
	TopP                *float64              `json:"top_p,omitempty"`
	Stop                []string              `json:"stop,omitempty"`
	Stream              bool                  `json:"stream,omitempty"`
	StreamOptions       *StreamOptions        `json:"stream_options,omitempty"`
	Tools               []Tool                `json:"tools,omitempty"`
	ToolChoice          any                   `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool                 `json:"parallel_tool_calls,omitempty"`
	User                string                `json:"user,omitempty"`
	ResponseFormat      any                   `json:"response_format,omitempty"`
	ReasoningEffort     string                `json:"reasoning_effort,omitempty"`
}

// StreamOptions asks a streamed chat completion for its usage event.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// UpstreamChatMessage is one message the gateway writes; Content is a string,
// a []UpstreamContentPart or nil (null).
type UpstreamChatMessage struct {
	Role       string     `json:"role"`
	Content    any        `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// ThinkingBlocks are written for Anthropic upstreams only.
	ThinkingBlocks []ThinkingBlock `json:"thinking_blocks,omitempty"`
}

// UpstreamContentPart is one content part the gateway writes (text or
// image_url).
type UpstreamContentPart struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	ImageURL *ImageURL `json:"image_url,omitempty"`
}

// UpstreamChatCompletion is the part of a provider's chat completion that a
// translator reads (usage is read by the processor's scan).
type UpstreamChatCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content          *string         `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			ThinkingBlocks   []ThinkingBlock `json:"thinking_blocks"`
			ToolCalls        []ToolCall      `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

// UpstreamChatChunk is the part of a provider's chat.completion.chunk event
// that a translator reads.
type UpstreamChatChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta struct {
			Content          *string         `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			ThinkingBlocks   []ThinkingBlock `json:"thinking_blocks"`
			ToolCalls        []struct {
				Index    int          `json:"index"`
				ID       string       `json:"id"`
				Function FunctionCall `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}
