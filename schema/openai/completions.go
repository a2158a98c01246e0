package openai

import "encoding/json"

// CompletionRequest is the part of a client's legacy completions request
// (POST /v1/completions) that a translator through chat reads (model, stream,
// max_tokens, n, best_of and user are read by the processor's scan).
type CompletionRequest struct {
	Prompt           json.RawMessage `json:"prompt"`
	Suffix           *string         `json:"suffix"`
	Echo             bool            `json:"echo"`
	Logprobs         *int            `json:"logprobs"`
	BestOf           *int            `json:"best_of"`
	N                *int            `json:"n"`
	Temperature      *float64        `json:"temperature"`
	TopP             *float64        `json:"top_p"`
	Stop             json.RawMessage `json:"stop"`
	Seed             *int64          `json:"seed"`
	PresencePenalty  *float64        `json:"presence_penalty"`
	FrequencyPenalty *float64        `json:"frequency_penalty"`
	StreamOptions    *StreamOptions  `json:"stream_options"`
}

// TextCompletion is a legacy completion (object "text_completion") the
// gateway writes, whole or as one event of a stream (Usage nil then, except
// on the usage event).
type TextCompletion struct {
	ID      string                 `json:"id"`
	Object  string                 `json:"object"`
	Created int64                  `json:"created"`
	Model   string                 `json:"model"`
	Choices []TextCompletionChoice `json:"choices"`
	Usage   *CompletionUsage       `json:"usage,omitempty"`
}

// TextCompletionChoice is one choice of a legacy completion; FinishReason is
// null in a stream until the last text event.
type TextCompletionChoice struct {
	Text         string  `json:"text"`
	Index        int     `json:"index"`
	Logprobs     *int    `json:"logprobs"` // always null: logprobs are not served through chat
	FinishReason *string `json:"finish_reason"`
}

// CompletionUsage is a legacy completion's usage.
type CompletionUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}
