package cache

import (
	"encoding/json"
)

// chatCompletion is the part of a chat.completion the cache reads and writes;
// Extra members of a message other than these make it unrenderable as a
// stream.
type chatCompletion struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint *string         `json:"system_fingerprint,omitempty"`
	ServiceTier       *string         `json:"service_tier,omitempty"`
	Choices           []chatChoice    `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Message      chatMessage     `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chatMessage struct {
	Role             string          `json:"role"`
	Content          *string         `json:"content"`
	Refusal          *string         `json:"refusal"`
	ReasoningContent *string         `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall  `json:"tool_calls,omitempty"`
	Annotations      json.RawMessage `json:"annotations,omitempty"`
	Audio            json.RawMessage `json:"audio,omitempty"`
	FunctionCall     json.RawMessage `json:"function_call,omitempty"`
}

type chatToolCall struct {
	Index    *int   `json:"index,omitempty"` // stream deltas only
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatChunk is one chat.completion.chunk.
type chatChunk struct {
	ID                string            `json:"id"`
	Object            string            `json:"object"`
	Created           int64             `json:"created"`
	Model             string            `json:"model"`
	SystemFingerprint *string           `json:"system_fingerprint,omitempty"`
	ServiceTier       *string           `json:"service_tier,omitempty"`
	Choices           []chatChunkChoice `json:"choices"`
	Usage             json.RawMessage   `json:"usage,omitempty"`
}

type chatChunkChoice struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type chatDelta struct {
	Role             string         `json:"role,omitempty"`
	Content          *string        `json:"content,omitempty"`
	Refusal          *string        `json:"refusal,omitempty"`
	ReasoningContent *string        `json:"reasoning_content,omitempty"`
	ToolCalls        []chatToolCall `json:"tool_calls,omitempty"`
}

// isNull reports whether a raw member is absent or null.
func isNull(r json.RawMessage) bool { return len(r) == 0 || string(r) == "null" }

// renderChatStream renders a chat.completion as the stream OpenAI sends for
// it: per choice a first chunk with the role and empty content (none when
// the content is null), the
// reasoning, content or refusal, each tool call's name then its arguments,
// and a chunk with the finish reason and an empty delta; with include_usage
// every chunk has "usage":null and a last chunk with no choices carries the
// usage; then "data: [DONE]".
func renderChatStream(e *Entry, includeUsage bool) ([]byte, error) {
	var c chatCompletion
	if err := json.Unmarshal(e.Body, &c); err != nil {
		return nil, ErrUnsupported
	}
	var usageNull json.RawMessage
	if includeUsage {
		usageNull = json.RawMessage("null")
	}
	var out []byte
	var err error
	emit := func(ch chatChunkChoice) {
		if err != nil {
			return
		}
		out, err = appendEvent(out, "", chatChunk{
			ID: c.ID, Object: "chat.completion.chunk", Created: c.Created, Model: c.Model,
			SystemFingerprint: c.SystemFingerprint, ServiceTier: c.ServiceTier,
			Choices: []chatChunkChoice{ch}, Usage: usageNull,
		})
	}
	empty := ""
	for _, ch := range c.Choices {
		m := ch.Message
		if !isNull(m.Audio) || !isNull(m.FunctionCall) {
			return nil, ErrUnsupported
		}
		first := chatDelta{Role: "assistant"}
		if m.Content != nil { // a reply of tool calls only has null content
			first.Content = &empty
		}
		emit(chatChunkChoice{Index: ch.Index, Delta: first})
		if m.ReasoningContent != nil && *m.ReasoningContent != "" {
			emit(chatChunkChoice{Index: ch.Index, Delta: chatDelta{ReasoningContent: m.ReasoningContent}})
		}
		if m.Content != nil && *m.Content != "" {
			emit(chatChunkChoice{Index: ch.Index, Delta: chatDelta{Content: m.Content}, Logprobs: ch.Logprobs})
		}
		if m.Refusal != nil && *m.Refusal != "" {
			emit(chatChunkChoice{Index: ch.Index, Delta: chatDelta{Refusal: m.Refusal}})
		}
		for j, tc := range m.ToolCalls {
			first := chatToolCall{Index: &j, ID: tc.ID, Type: tc.Type}
			first.Function.Name = tc.Function.Name
			emit(chatChunkChoice{Index: ch.Index, Delta: chatDelta{ToolCalls: []chatToolCall{first}}})
			if tc.Function.Arguments != "" {
				args := chatToolCall{Index: &j}
				args.Function.Arguments = tc.Function.Arguments
				emit(chatChunkChoice{Index: ch.Index, Delta: chatDelta{ToolCalls: []chatToolCall{args}}})
			}
		}
		emit(chatChunkChoice{Index: ch.Index, FinishReason: ch.FinishReason})
	}
	if includeUsage && err == nil {
		u := c.Usage
		if isNull(u) {
			u = openAIUsage(e.Usage)
		}
		out, err = appendEvent(out, "", chatChunk{
			ID: c.ID, Object: "chat.completion.chunk", Created: c.Created, Model: c.Model,
			SystemFingerprint: c.SystemFingerprint, ServiceTier: c.ServiceTier,
			Choices: []chatChunkChoice{}, Usage: u,
		})
	}
	if err != nil {
		return nil, err
	}
	return append(out, "data: [DONE]\n\n"...), nil
}

// completion is a text_completion (the legacy completions API).
type completion struct {
	ID                string             `json:"id"`
	Object            string             `json:"object"`
	Created           int64              `json:"created"`
	Model             string             `json:"model"`
	SystemFingerprint *string            `json:"system_fingerprint,omitempty"`
	Choices           []completionChoice `json:"choices"`
	Usage             json.RawMessage    `json:"usage,omitempty"`
}

type completionChoice struct {
	Text         string          `json:"text"`
	Index        int             `json:"index"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// renderCompletionsStream renders a text_completion as its stream: per
// choice the text, then an empty text with the finish reason; the usage
// chunk (no choices) with include_usage; then "data: [DONE]".
func renderCompletionsStream(e *Entry, includeUsage bool) ([]byte, error) {
	var c completion
	if err := json.Unmarshal(e.Body, &c); err != nil {
		return nil, ErrUnsupported
	}
	var out []byte
	var err error
	emit := func(choices []completionChoice, usage json.RawMessage) {
		if err != nil {
			return
		}
		out, err = appendEvent(out, "", completion{
			ID: c.ID, Object: "text_completion", Created: c.Created, Model: c.Model,
			SystemFingerprint: c.SystemFingerprint, Choices: choices, Usage: usage,
		})
	}
	var usageNull json.RawMessage
	if includeUsage {
		usageNull = json.RawMessage("null")
	}
	for _, ch := range c.Choices {
		emit([]completionChoice{{Text: ch.Text, Index: ch.Index, Logprobs: ch.Logprobs}}, usageNull)
		emit([]completionChoice{{Index: ch.Index, FinishReason: ch.FinishReason}}, usageNull)
	}
	if includeUsage {
		u := c.Usage
		if isNull(u) {
			u = openAIUsage(e.Usage)
		}
		emit([]completionChoice{}, u)
	}
	if err != nil {
		return nil, err
	}
	return append(out, "data: [DONE]\n\n"...), nil
}
