package bedrock

import "encoding/json"

// ConverseRequest is the body of Converse and ConverseStream (the model id is
// in the path).
type ConverseRequest struct {
	Messages                     []Message        `json:"messages"`
	System                       []SystemBlock    `json:"system,omitempty"`
	InferenceConfig              *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig                   *ToolConfig      `json:"toolConfig,omitempty"`
	AdditionalModelRequestFields json.RawMessage  `json:"additionalModelRequestFields,omitempty"`
}

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one turn.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// SystemBlock is a system prompt block.
type SystemBlock struct {
	Text string `json:"text,omitempty"`
}

// ContentBlock is one block of a message; exactly one field is set.
type ContentBlock struct {
	Text             *string           `json:"text,omitempty"`
	Image            *ImageBlock       `json:"image,omitempty"`
	ToolUse          *ToolUseBlock     `json:"toolUse,omitempty"`
	ToolResult       *ToolResultBlock  `json:"toolResult,omitempty"`
	ReasoningContent *ReasoningContent `json:"reasoningContent,omitempty"`
}

// ImageBlock is an image: Format png, jpeg, gif or webp; Source.Bytes base64.
type ImageBlock struct {
	Format string `json:"format"`
	Source struct {
		Bytes string `json:"bytes"`
	} `json:"source"`
}

// ToolUseBlock is a tool call of the model; Input is a JSON object.
type ToolUseBlock struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResultBlock is the result of a tool call.
type ToolResultBlock struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []ToolResultContent `json:"content"`
	Status    string              `json:"status,omitempty"` // success | error
}

// ToolResultContent is text or a JSON document.
type ToolResultContent struct {
	Text string          `json:"text,omitempty"`
	JSON json.RawMessage `json:"json,omitempty"`
}

// ReasoningContent is the model's reasoning (Claude's thinking).
type ReasoningContent struct {
	ReasoningText *struct {
		Text      string `json:"text"`
		Signature string `json:"signature,omitempty"`
	} `json:"reasoningText,omitempty"`
	RedactedContent string `json:"redactedContent,omitempty"`
}

// InferenceConfig are the common sampling options.
type InferenceConfig struct {
	MaxTokens     *int64   `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolConfig lists the tools and the tool choice.
type ToolConfig struct {
	Tools      []Tool          `json:"tools"`
	ToolChoice json.RawMessage `json:"toolChoice,omitempty"` // {"auto":{}} | {"any":{}} | {"tool":{"name":…}}
}

// Tool is one tool specification.
type Tool struct {
	ToolSpec struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	} `json:"toolSpec"`
}

// ConverseResponse is Converse's reply.
type ConverseResponse struct {
	Output struct {
		Message *Message `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      *Usage `json:"usage"`
}

// Stop reasons.
const (
	StopEndTurn             = "end_turn"
	StopToolUse             = "tool_use"
	StopMaxTokens           = "max_tokens"
	StopSequence            = "stop_sequence"
	StopGuardrailIntervened = "guardrail_intervened"
	StopContentFiltered     = "content_filtered"
)

// Usage is the token usage of a reply: InputTokens exclude the cache reads
// and writes, counted apart.
type Usage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens,omitempty"`
}

// ConverseStream event types (the :event-type header) and their payloads.
const (
	EventMessageStart      = "messageStart"
	EventContentBlockStart = "contentBlockStart"
	EventContentBlockDelta = "contentBlockDelta"
	EventContentBlockStop  = "contentBlockStop"
	EventMessageStop       = "messageStop"
	EventMetadata          = "metadata"
)

// StreamEvent is the payload of any ConverseStream event (the fields of the
// event's type are set).
type StreamEvent struct {
	Role              string `json:"role,omitempty"`
	ContentBlockIndex int    `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse,omitempty"`
	} `json:"start,omitempty"`
	Delta *struct {
		Text    *string `json:"text,omitempty"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse,omitempty"`
		ReasoningContent *struct {
			Text      string `json:"text,omitempty"`
			Signature string `json:"signature,omitempty"`
		} `json:"reasoningContent,omitempty"`
	} `json:"delta,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	Usage      *Usage `json:"usage,omitempty"`
}

// ErrorBody is Bedrock's error body (the error type is in the
// x-amzn-ErrorType header, or the :exception-type of a stream message).
type ErrorBody struct {
	Message  string `json:"message"`
	MessageU string `json:"Message"`
}

// Text is the error's message, whichever its capitalisation.
func (e ErrorBody) Text() string {
	if e.Message != "" {
		return e.Message
	}
	return e.MessageU
}

// TitanEmbeddingRequest is InvokeModel's body for amazon.titan-embed-*.
type TitanEmbeddingRequest struct {
	InputText  string `json:"inputText"`
	Dimensions *int64 `json:"dimensions,omitempty"`
	Normalize  *bool  `json:"normalize,omitempty"`
}

// TitanEmbeddingResponse is its reply.
type TitanEmbeddingResponse struct {
	Embedding           []float64 `json:"embedding"`
	InputTextTokenCount int64     `json:"inputTextTokenCount"`
}

// CohereEmbeddingRequest is InvokeModel's body for cohere.embed-*.
type CohereEmbeddingRequest struct {
	Texts     []string `json:"texts"`
	InputType string   `json:"input_type"`
	Truncate  string   `json:"truncate,omitempty"`
}

// CohereEmbeddingResponse is its reply (embedding_types unset: floats).
type CohereEmbeddingResponse struct {
	Embeddings [][]float64 `json:"embeddings"`
	ID         string      `json:"id"`
}
