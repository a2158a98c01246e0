package anthropic

import "encoding/json"

// Request is the part of a client's Messages request that a translator reads
// (model, stream, max_tokens and metadata are read by the processor's scan).
type Request struct {
	System        json.RawMessage `json:"system"`
	Messages      []Message       `json:"messages"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Tools         []Tool          `json:"tools"`
	ToolChoice    *ToolChoice     `json:"tool_choice"`
}

// ToolChoice is a client's tool_choice: auto, any, tool (with Name) or none.
type ToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
}

// Message is one turn of a client's request; Content is a string or an array
// of Block.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Block is a content block of a client's request (text, image, tool_use,
// tool_result, thinking, …).
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Source    *ImageSource    `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ImageSource is an image block's source: base64 data with its media type, or
// a URL.
type ImageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

// Tool declares a client tool: its input_schema is a JSON schema.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// UpstreamRequest is a Messages request the gateway writes to an Anthropic
// provider.
type UpstreamRequest struct {
	Model         string            `json:"model"`
	MaxTokens     int64             `json:"max_tokens"`
	System        []UpstreamBlock   `json:"system,omitempty"`
	Messages      []UpstreamMessage `json:"messages"`
	Temperature   *float64          `json:"temperature,omitempty"`
	TopP          *float64          `json:"top_p,omitempty"`
	StopSequences []string          `json:"stop_sequences,omitempty"`
	Stream        bool              `json:"stream,omitempty"`
	Tools         []Tool            `json:"tools,omitempty"`
	ToolChoice    json.RawMessage   `json:"tool_choice,omitempty"`
	Metadata      *Metadata         `json:"metadata,omitempty"`
	Thinking      *Thinking         `json:"thinking,omitempty"`
	OutputConfig  *OutputConfig     `json:"output_config,omitempty"`
}

// Thinking turns on extended thinking: type "enabled" with budget_tokens, at
// least 1024 and below max_tokens.
type Thinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

// OutputConfig holds the output format of structured outputs (generally
// available, no beta header).
type OutputConfig struct {
	Format *OutputFormat `json:"format,omitempty"`
}

// OutputFormat is a structured output format: type "json_schema" with the
// JSON Schema the reply's text follows.
type OutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// Metadata of a request: user_id identifies the end user.
type Metadata struct {
	UserID string `json:"user_id"`
}

// UpstreamMessage is one turn the gateway writes.
type UpstreamMessage struct {
	Role    string          `json:"role"`
	Content []UpstreamBlock `json:"content"`
}

// UpstreamBlock is a content block the gateway writes, or reads back from a
// provider's message (text, thinking, image, tool_use, tool_result).
type UpstreamBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	Source    *ImageSource    `json:"source,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// Usage is the usage object of the Messages API: input_tokens are the
// uncached input; cache reads and cache writes are counted apart.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

// UpstreamResponse is the part of a provider's message that a translator
// reads.
type UpstreamResponse struct {
	ID         string          `json:"id"`
	Model      string          `json:"model"`
	Content    []UpstreamBlock `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      Usage           `json:"usage"`
}

// StreamEvent is one event of a provider's Messages stream, as a translator
// reads it; Delta is decoded apart into a StreamDelta.
type StreamEvent struct {
	Type    string            `json:"type"`
	Index   int64             `json:"index"`
	Message *UpstreamResponse `json:"message"`
	Block   *UpstreamBlock    `json:"content_block"`
	Delta   json.RawMessage   `json:"delta"`
	Error   json.RawMessage   `json:"error"`
}

// StreamDelta is the delta of a content_block_delta or message_delta event.
type StreamDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	PartialJSON string `json:"partial_json"`
	StopReason  string `json:"stop_reason"`
}

// ReplyMessage is a complete message the gateway writes to a client (also the
// message of message_start).
type ReplyMessage struct {
	ID           string       `json:"id"`
	Type         string       `json:"type"`
	Role         string       `json:"role"`
	Model        string       `json:"model"`
	Content      []ReplyBlock `json:"content"`
	StopReason   *string      `json:"stop_reason"`
	StopSequence *string      `json:"stop_sequence"`
	Usage        Usage        `json:"usage"`
}

// ReplyBlock is a content block the gateway writes to a client (text or
// tool_use).
type ReplyBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

// ContentBlockDeltaEvent is a content_block_delta event, the one written for
// every streamed token: a struct rather than a map, its members in the sorted
// order the other events' maps are written in.
type ContentBlockDeltaEvent struct {
	Delta BlockDelta `json:"delta"`
	Index int        `json:"index"`
	Type  string     `json:"type"`
}

// BlockDelta is a text_delta (Text) or an input_json_delta (PartialJSON), never
// empty.
type BlockDelta struct {
	PartialJSON string `json:"partial_json,omitempty"`
	Text        string `json:"text,omitempty"`
	Type        string `json:"type"`
}
