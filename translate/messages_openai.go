package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/anthropic"
	"github.com/tollgate-ai/tollgate/schema/openai"
)

// messagesOpenAI serves Anthropic's Messages API from an OpenAI-compatible (or
// Azure OpenAI) deployment, so Anthropic clients such as Claude Code can use
// any model group: the request becomes a chat completions request (system →
// a system message, tool_use blocks → tool_calls, tool_result blocks → tool
// messages, images → image_url parts), the response and the SSE stream become
// Messages again. The stream always asks for usage; Anthropic clients get it
// in message_delta.
type messagesOpenAI struct {
	azure  bool
	apiKey string
	model  string // the client's model name, echoed in responses

	sse   SSEParser
	out   []byte
	usage openAIStreamUsage
	// stream state
	started  bool
	id       string
	block    int    // index of the open content block, -1 when none
	blockTyp string // "text" or "tool_use"
	next     int    // index of the next block
	tools    map[int]int
	finish   string
	ended    bool // message_stop written
}

var _ Translator = (*messagesOpenAI)(nil)

// --- request ------------------------------------------------------------------

// Request builds the chat completions request.
func (t *messagesOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.model, t.block = target.APIKey, in.Model, -1
	var req anthropic.Request
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid messages request: %w", err)
	}
	out := openai.UpstreamChatRequest{
		Model:               target.ProviderModel,
		MaxCompletionTokens: anthropicMaxTokens(in, target),
		Temperature:         req.Temperature,
		TopP:                req.TopP,
		Stop:                req.StopSequences,
		Stream:              in.Stream,
		User:                in.User,
	}
	if out.Model == "" {
		out.Model = in.Model
	}
	if in.Stream {
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if sys, err := systemText(req.System); err != nil {
		return nil, err
	} else if sys != "" {
		out.Messages = append(out.Messages, openai.UpstreamChatMessage{Role: "system", Content: sys})
	}
	for i, m := range req.Messages {
		msgs, err := chatMessages(m)
		if err != nil {
			return nil, fmt.Errorf("messages.%d: %w", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	for _, tool := range req.Tools {
		var ot openai.Tool
		ot.Type = "function"
		ot.Function.Name, ot.Function.Description, ot.Function.Parameters = tool.Name, tool.Description, tool.InputSchema
		out.Tools = append(out.Tools, ot)
	}
	if c := req.ToolChoice; c != nil && len(out.Tools) > 0 {
		switch c.Type {
		case "any":
			out.ToolChoice = "required"
		case "none":
			out.ToolChoice = "none"
		case "tool":
			out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}
		default:
			out.ToolChoice = "auto"
		}
		if c.DisableParallelToolUse {
			f := false
			out.ParallelToolCalls = &f
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	o := &Outbound{Body: body, Remove: []string{HdrAnthropicVersion, HdrAnthropicBeta}}
	o.Path, o.Headers = openAIUpstream(target, opChat, t.azure)
	return o, nil
}

// blocksOf reads a content: a string is one text block.
func blocksOf(raw json.RawMessage) ([]anthropic.Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropic.Block{{Type: "text", Text: s}}, nil
	}
	var blocks []anthropic.Block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, errors.New("content must be a string or an array of content blocks")
	}
	return blocks, nil
}

// roleSystem is the role of a system message inside an Anthropic request's
// messages: Anthropic's API takes them and Claude Code sends them between
// turns. Each translator maps them as its target allows (in place for
// OpenAI chat, appended in order to Converse's system list or Gemini's
// systemInstruction); none is dropped.
const roleSystem = "system"

// systemText joins the system prompt (a string or text blocks).
func systemText(raw json.RawMessage) (string, error) {
	blocks, err := blocksOf(raw)
	if err != nil {
		return "", errors.New("system must be a string or an array of text blocks")
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n\n"), nil
}

// chatMessages converts one Messages turn into chat messages: a user turn's
// tool results become tool messages (first, as OpenAI requires them right
// after the assistant's tool calls), an assistant's tool_use blocks its
// tool_calls. Thinking blocks are dropped.
func chatMessages(m anthropic.Message) ([]openai.UpstreamChatMessage, error) {
	blocks, err := blocksOf(m.Content)
	if err != nil {
		return nil, err
	}
	var out []openai.UpstreamChatMessage
	var parts []openai.UpstreamContentPart
	var calls []openai.ToolCall
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, openai.UpstreamContentPart{Type: "text", Text: b.Text})
		case "image":
			if b.Source == nil {
				return nil, errors.New("image block without source")
			}
			u := b.Source.URL
			if b.Source.Type == "base64" {
				u = "data:" + b.Source.MediaType + ";base64," + b.Source.Data
			}
			parts = append(parts, openai.UpstreamContentPart{Type: "image_url", ImageURL: &openai.ImageURL{URL: u}})
		case "tool_use":
			c := openai.ToolCall{ID: b.ID, Type: "function"}
			c.Function.Name, c.Function.Arguments = b.Name, toolArguments(b.Input)
			calls = append(calls, c)
		case "tool_result":
			text, err := systemText(b.Content)
			if err != nil {
				return nil, errors.New("tool_result content must be a string or text blocks")
			}
			if b.IsError && text == "" {
				text = "error"
			}
			out = append(out, openai.UpstreamChatMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
		case "thinking", "redacted_thinking":
		default:
			return nil, fmt.Errorf("content block type %q is not supported by this model", b.Type)
		}
	}
	switch m.Role {
	case "user":
		if len(parts) > 0 {
			out = append(out, openai.UpstreamChatMessage{Role: "user", Content: flatten(parts)})
		}
	case "system": // Anthropic's API accepts them (Claude Code sends them): kept in place
		if len(calls) > 0 || len(out) > 0 {
			return nil, errors.New("a system message takes text only")
		}
		for _, p := range parts {
			if p.Type != "text" {
				return nil, errors.New("a system message takes text only")
			}
		}
		if len(parts) > 0 {
			out = append(out, openai.UpstreamChatMessage{Role: "system", Content: flatten(parts)})
		}
	case "assistant":
		msg := openai.UpstreamChatMessage{Role: "assistant", ToolCalls: calls}
		if len(parts) > 0 {
			msg.Content = flatten(parts)
		}
		if len(parts) > 0 || len(calls) > 0 {
			out = append(out, msg)
		}
	default:
		return nil, fmt.Errorf("role %q is not supported", m.Role)
	}
	return out, nil
}

// flatten sends text-only content as a plain string (every OpenAI-compatible
// server accepts it), else the parts.
func flatten(parts []openai.UpstreamContentPart) any {
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return parts
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// --- response -----------------------------------------------------------------

// stopReason maps OpenAI's finish_reason to Anthropic's stop_reason.
func stopReason(f string) string {
	switch f {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	default:
		return "end_turn"
	}
}

// anthropicUsageOf reports OpenAI's usage the Anthropic way: input_tokens
// exclude the cached tokens, reported as cache reads.
func anthropicUsageOf(u openAIUsage) anthropic.Usage {
	cached := min(u.cached, u.prompt)
	return anthropic.Usage{InputTokens: u.prompt - cached, CacheReadInputTokens: cached, OutputTokens: u.completion}
}

// Response converts a chat completion into a message.
func (t *messagesOpenAI) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r openai.UpstreamChatCompletion
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	v, err := TopLevelMember(body, "usage")
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	u, ok := parseOpenAIUsage(body, v)
	msg := anthropic.ReplyMessage{ID: anthropicMessageID(r.ID), Type: "message", Role: "assistant", Model: t.model, Content: []anthropic.ReplyBlock{}, Usage: anthropicUsageOf(u)}
	stop := "end_turn"
	if len(r.Choices) > 0 {
		c := r.Choices[0]
		if c.Message.Content != nil && *c.Message.Content != "" {
			msg.Content = append(msg.Content, anthropic.ReplyBlock{Type: "text", Text: c.Message.Content})
		}
		for _, tc := range c.Message.ToolCalls {
			input := json.RawMessage(tc.Function.Arguments)
			if !json.Valid(input) {
				input = json.RawMessage(`{}`)
			}
			msg.Content = append(msg.Content, anthropic.ReplyBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: input})
		}
		stop = stopReason(c.FinishReason)
	}
	msg.StopReason = &stop
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	if !ok {
		return out, kernel.Usage{}, errNoUsage
	}
	return out, u.kernel(), nil
}

// --- stream -------------------------------------------------------------------

// StreamChunk converts chat.completion.chunk events into Messages events:
// message_start, content_block_start/delta/stop for text and each tool call,
// message_delta (stop_reason and the usage) and message_stop at data: [DONE]
// (or at the end of the stream when [DONE] never came but a finish_reason did).
func (t *messagesOpenAI) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.out = t.out[:0]
	err := t.sse.FeedAll(chunk, eos, t.event)
	if err == nil && eos && t.finish != "" && !t.ended {
		t.end()
	}
	return append([]byte{}, t.out...), err
}

func (t *messagesOpenAI) emit(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	t.out = AppendSSEEvent(t.out, name, b)
}

func (t *messagesOpenAI) start() {
	if t.started {
		return
	}
	t.started = true
	t.emit("message_start", map[string]any{"type": "message_start", "message": anthropic.ReplyMessage{
		ID: t.id, Type: "message", Role: "assistant", Model: t.model, Content: []anthropic.ReplyBlock{},
	}})
}

func (t *messagesOpenAI) closeBlock() {
	if t.block >= 0 {
		t.emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": t.block})
		t.block = -1
	}
}

func (t *messagesOpenAI) openBlock(typ string, block anthropic.ReplyBlock) {
	t.closeBlock()
	t.block, t.blockTyp = t.next, typ
	t.next++
	t.emit("content_block_start", map[string]any{"type": "content_block_start", "index": t.block, "content_block": block})
}

func (t *messagesOpenAI) end() {
	t.start()
	t.closeBlock()
	stop := stopReason(t.finish)
	t.emit("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": t.deltaUsage(),
	})
	t.emit("message_stop", map[string]any{"type": "message_stop"})
	t.ended = true
}

// deltaUsage is the usage message_delta reports: the provider's, else the
// output estimated from the streamed text.
func (t *messagesOpenAI) deltaUsage() anthropic.Usage {
	if t.usage.reported {
		return anthropicUsageOf(t.usage.usage)
	}
	return anthropic.Usage{OutputTokens: EstimateTokens(t.usage.text)}
}

func (t *messagesOpenAI) event(ev SSEEvent) {
	if t.ended {
		return
	}
	if bytes.Equal(ev.Data, doneData) {
		t.end()
		return
	}
	t.usage.observe(ev.Data)
	var c openai.UpstreamChatChunk
	if json.Unmarshal(ev.Data, &c) != nil {
		return
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		e := upstreamOpenAIError(500, ev.Data, t.apiKey)
		t.emit("error", map[string]any{"type": "error", "error": anthropicErrorDetail{Type: anthropicAPIError, Message: e.Message}})
		return
	}
	if t.id == "" {
		t.id = anthropicMessageID(c.ID)
	}
	t.start()
	for _, ch := range c.Choices {
		d := ch.Delta
		if d.Content != nil && *d.Content != "" {
			if t.block < 0 || t.blockTyp != "text" {
				empty := ""
				t.openBlock("text", anthropic.ReplyBlock{Type: "text", Text: &empty})
			}
			t.emit("content_block_delta", anthropic.ContentBlockDeltaEvent{
				Delta: anthropic.BlockDelta{Text: *d.Content, Type: "text_delta"}, Index: t.block, Type: "content_block_delta",
			})
		}
		for _, tc := range d.ToolCalls {
			if t.tools == nil {
				t.tools = map[int]int{}
			}
			bi, ok := t.tools[tc.Index]
			if !ok {
				t.openBlock("tool_use", anthropic.ReplyBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: json.RawMessage(`{}`)})
				bi = t.block
				t.tools[tc.Index] = bi
			}
			if tc.Function.Arguments != "" && bi == t.block {
				t.emit("content_block_delta", anthropic.ContentBlockDeltaEvent{
					Delta: anthropic.BlockDelta{PartialJSON: tc.Function.Arguments, Type: "input_json_delta"}, Index: bi, Type: "content_block_delta",
				})
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			t.finish = *ch.FinishReason
			t.closeBlock()
		}
	}
}

// StreamUsage is the usage of the stream's usage chunk, or an estimate.
func (t *messagesOpenAI) StreamUsage() (kernel.Usage, bool) { return t.usage.result() }

// Error converts an OpenAI or Azure error into Anthropic's shape.
func (t *messagesOpenAI) Error(status int, body []byte) []byte {
	return AnthropicErrorBody(upstreamOpenAIError(status, body, t.apiKey))
}

// countTokensEstimate answers count_tokens for OpenAI-compatible and Azure
// deployments, which have no such endpoint, without going upstream: the
// estimate is the gateway's usual one, a token per 4 bytes of the text in the
// request (system, message text and tool results, see textBytes) plus the
// tool definitions' JSON. It is free, like Anthropic's count_tokens.
type countTokensEstimate struct{}

var _ Translator = countTokensEstimate{}

// Request answers {"input_tokens":N} at once (Outbound.Reply).
func (countTokensEstimate) Request(in *Inbound, _ *Target) (*Outbound, error) {
	n := TextBytes(in.Body) // message contents and text blocks (system's too)
	if v, err := TopLevelMember(in.Body, "system"); err == nil {
		if sys, ok := StringValue(in.Body, v); ok {
			n += int64(len(sys))
		}
	}
	if v, err := TopLevelMember(in.Body, "tools"); err == nil && v.OK() {
		n += int64(v.End - v.Start)
	}
	b, err := json.Marshal(struct {
		InputTokens int64 `json:"input_tokens"`
	}{EstimateTokens(n)})
	if err != nil {
		return nil, err
	}
	return &Outbound{Reply: b}, nil
}

// Response is never called: the request does not go upstream.
func (countTokensEstimate) Response(body []byte) ([]byte, kernel.Usage, error) {
	return body, kernel.Usage{}, nil
}

// StreamChunk is never called: the request does not go upstream.
func (countTokensEstimate) StreamChunk(chunk []byte, _ bool) ([]byte, error) { return chunk, nil }

// StreamUsage is zero: counting tokens is free.
func (countTokensEstimate) StreamUsage() (kernel.Usage, bool) { return kernel.Usage{}, true }

// Error renders an upstream error in Anthropic's shape (not reached).
func (countTokensEstimate) Error(status int, body []byte) []byte {
	return AnthropicErrorBody(upstreamOpenAIError(status, body, ""))
}

// anthropicMessageID is the id of a translated message: Anthropic's ids start
// with msg_, and clients (Claude Code) expect it.
func anthropicMessageID(id string) string {
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	return "msg_" + strings.TrimPrefix(id, "chatcmpl-")
}
