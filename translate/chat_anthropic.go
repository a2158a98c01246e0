package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/anthropic"
	"github.com/tollgate-ai/tollgate/schema/openai"
)

// anthropicNow is the clock of the "created" field of translated responses
// (tests fix it).
var anthropicNow = time.Now

// chatAnthropic serves OpenAI's chat completions API from an Anthropic
// deployment: the request becomes a Messages request (system and developer
// messages → system, image parts → image blocks, tools → tools with
// input_schema, tool calls → tool_use blocks, tool messages → tool_result
// blocks), the response and the SSE stream become chat completions again
// (thinking blocks become reasoning_content, as DeepSeek and vLLM name it,
// and thinking_blocks with their signatures; response_format and
// reasoning_effort: anthropic_reasoning.go).
//
// max_tokens, which Anthropic requires, is the kernel's clamp, else the
// client's max_completion_tokens or max_tokens, else the deployment's
// DefaultMaxTokens, else 4096.
type chatAnthropic struct {
	apiKey       string
	includeUsage bool
	created      int64

	sse   SSEParser
	usage anthropicStreamUsage
	out   []byte
	// stream state
	id, model string
	// head is the start of every chunk, up to "choices" (id, object, created,
	// model): made once the message's id and model are known.
	head     []byte
	tools    map[int64]int // content block index → tool call index
	nextTool int
}

var _ Translator = (*chatAnthropic)(nil)

// --- request ------------------------------------------------------------------

// Request builds the Messages request at base path + /messages.
func (t *chatAnthropic) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.model = target.APIKey, in.Model // replies name the model the client asked for
	t.includeUsage = in.IncludeUsage
	t.created = anthropicNow().Unix()
	var req openai.ChatRequest
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid chat completions request: %w", err)
	}
	if req.N != nil && *req.N > 1 {
		return nil, errors.New("n: only one choice is supported by this model")
	}
	out := anthropic.UpstreamRequest{
		Model:       target.ProviderModel,
		MaxTokens:   anthropicMaxTokens(in, target),
		Messages:    []anthropic.UpstreamMessage{},
		Temperature: req.Temperature,
		TopP:        req.TopP,
		Stream:      in.Stream,
	}
	if out.Model == "" {
		out.Model = in.Model
	}
	if in.User != "" {
		out.Metadata = &anthropic.Metadata{UserID: in.User}
	}
	stops, err := stopSequences(req.Stop)
	if err != nil {
		return nil, err
	}
	out.StopSequences = stops
	for i, m := range req.Messages {
		if err := appendChatMessage(&out, m); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	for _, tool := range req.Tools {
		if tool.Type != "" && tool.Type != "function" {
			return nil, fmt.Errorf("tools: type %q is not supported by this model", tool.Type)
		}
		schema := tool.Function.Parameters
		if len(schema) == 0 || string(schema) == "null" {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, anthropic.Tool{Name: tool.Function.Name, Description: tool.Function.Description, InputSchema: schema})
	}
	choice, err := toolChoice(req.ToolChoice, req.ParallelToolCalls)
	if err != nil {
		return nil, err
	}
	if choice != nil && string(choice) == `{"type":"none"}` && len(out.Tools) == 0 {
		choice = nil
	}
	out.ToolChoice = choice
	if err := anthropicExtras(&out, &req); err != nil {
		return nil, err
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &Outbound{Path: joinPath(target.BasePath, "/messages"), Headers: anthropicHeaders(target, ""), Body: body}, nil
}

// stopSequences reads OpenAI's stop (a string, an array of strings or null).
func stopSequences(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("stop must be a string or an array of strings")
	}
	return many, nil
}

// toolChoice maps OpenAI's tool_choice and parallel_tool_calls.
func toolChoice(raw json.RawMessage, parallel *bool) (json.RawMessage, error) {
	var c map[string]any
	switch s := strings.TrimSpace(string(raw)); s {
	case "", "null", `"auto"`:
		if parallel != nil && !*parallel {
			c = map[string]any{"type": "auto"}
		}
	case `"required"`:
		c = map[string]any{"type": "any"}
	case `"none"`:
		return json.RawMessage(`{"type":"none"}`), nil
	default:
		var v struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &v) != nil || v.Function.Name == "" {
			return nil, errors.New("tool_choice must be none, auto, required or a function")
		}
		c = map[string]any{"type": "tool", "name": v.Function.Name}
	}
	if c == nil {
		return nil, nil
	}
	if parallel != nil && !*parallel {
		c["disable_parallel_tool_use"] = true
	}
	return json.Marshal(c)
}

// appendChatMessage adds one OpenAI message to the Messages request.
func appendChatMessage(out *anthropic.UpstreamRequest, m openai.ChatMessage) error {
	switch m.Role {
	case "system", "developer":
		blocks, err := contentBlocks(m.Content, false)
		if err != nil {
			return err
		}
		out.System = append(out.System, blocks...)
		return nil
	case "user":
		blocks, err := contentBlocks(m.Content, true)
		if err != nil {
			return err
		}
		appendTurn(out, "user", blocks)
		return nil
	case "assistant":
		blocks, err := contentBlocks(m.Content, false)
		if err != nil {
			return err
		}
		blocks = append(thinkingBlocks(m.ThinkingBlocks), blocks...)
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Function.Arguments)
			if strings.TrimSpace(tc.Function.Arguments) == "" {
				args = json.RawMessage(`{}`)
			} else if !json.Valid(args) {
				return fmt.Errorf("tool call %s: arguments are not JSON", tc.ID)
			}
			blocks = append(blocks, anthropic.UpstreamBlock{Type: "tool_use", ID: tc.ID, Name: tc.Function.Name, Input: args})
		}
		appendTurn(out, "assistant", blocks)
		return nil
	case "tool":
		text, err := contentText(m.Content)
		if err != nil {
			return err
		}
		content, _ := json.Marshal(text)
		appendTurn(out, "user", []anthropic.UpstreamBlock{{Type: "tool_result", ToolUseID: m.ToolCallID, Content: content}})
		return nil
	default:
		return fmt.Errorf("role %q is not supported", m.Role)
	}
}

// appendTurn adds blocks to the last message when it has the same role
// (consecutive tool results and user text form one user turn), else a new one.
func appendTurn(out *anthropic.UpstreamRequest, role string, blocks []anthropic.UpstreamBlock) {
	if len(blocks) == 0 {
		return
	}
	if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
		out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
		return
	}
	out.Messages = append(out.Messages, anthropic.UpstreamMessage{Role: role, Content: blocks})
}

// contentBlocks converts an OpenAI content (string, parts or null) into
// blocks; images are allowed only in user messages.
func contentBlocks(raw json.RawMessage, images bool) ([]anthropic.UpstreamBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []anthropic.UpstreamBlock{{Type: "text", Text: s}}, nil
	}
	var parts []openai.ChatContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, errors.New("content must be a string or an array of parts")
	}
	var blocks []anthropic.UpstreamBlock
	for _, p := range parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, anthropic.UpstreamBlock{Type: "text", Text: p.Text})
			}
		case "image_url":
			if !images || p.ImageURL == nil {
				return nil, errors.New("image parts are only supported in user messages")
			}
			src, err := imageSource(p.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, anthropic.UpstreamBlock{Type: "image", Source: src})
		default:
			return nil, fmt.Errorf("content part type %q is not supported by this model", p.Type)
		}
	}
	return blocks, nil
}

// contentText joins the text of a content (string or text parts).
func contentText(raw json.RawMessage) (string, error) {
	blocks, err := contentBlocks(raw, false)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// imageSource maps an image URL: data:<media type>;base64,<data> → a base64
// source, http(s) → a url source.
func imageSource(u string) (*anthropic.ImageSource, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mt, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || mt == "" {
			return nil, errors.New("image data URLs must be base64 (data:<type>;base64,...)")
		}
		return &anthropic.ImageSource{Type: "base64", MediaType: mt, Data: data}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return &anthropic.ImageSource{Type: "url", URL: u}, nil
	}
	return nil, errors.New("image_url.url must be an http(s) or data URL")
}

// --- response -----------------------------------------------------------------

// openAIUsageOf reports Anthropic's usage the OpenAI way: prompt_tokens
// include cache reads and writes, cached_tokens are the reads.
func openAIUsageOf(u anthropicUsage) openai.Usage {
	o := openai.Usage{
		PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		CompletionTokens: u.OutputTokens,
	}
	o.TotalTokens = o.PromptTokens + o.CompletionTokens
	o.PromptTokensDetails.CachedTokens = u.CacheReadInputTokens
	return o
}

// toolArguments renders a tool_use block's input as OpenAI's arguments
// string: the JSON compacted, "{}" when absent or invalid.
func toolArguments(input json.RawMessage) string {
	var args bytes.Buffer
	if len(input) == 0 || json.Compact(&args, input) != nil {
		return "{}"
	}
	return args.String()
}

// finishReason maps Anthropic's stop_reason to OpenAI's finish_reason.
func finishReason(s string) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	default: // end_turn, stop_sequence, pause_turn
		return "stop"
	}
}

// Response converts a message into a chat completion.
func (t *chatAnthropic) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r anthropic.UpstreamResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	msg := openai.ChatReplyMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			hasText = true
		case "thinking":
			msg.ReasoningContent += b.Thinking
			msg.ThinkingBlocks = append(msg.ThinkingBlocks, openai.ThinkingBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case "tool_use":
			tc := openai.ToolCall{ID: b.ID, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = b.Name, toolArguments(b.Input)
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
	}
	if hasText {
		s := text.String()
		msg.Content = &s
	}
	out, err := json.Marshal(openai.ChatCompletion{
		ID: r.ID, Object: "chat.completion", Created: t.created, Model: t.model,
		Choices: []openai.ChatChoice{{Message: msg, FinishReason: finishReason(r.StopReason)}},
		Usage:   openAIUsageOf(anthropicUsage(r.Usage)),
	})
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return out, anthropicUsage(r.Usage).kernel(), nil
}

// --- stream -------------------------------------------------------------------

// StreamChunk converts Messages events into chat.completion.chunk events: a
// first chunk with the role, text and tool-call argument deltas (tool calls
// numbered from 0 in order), a chunk with finish_reason, the usage chunk when
// the client asked for it, then data: [DONE].
func (t *chatAnthropic) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.out = t.out[:0]
	err := t.sse.FeedAll(chunk, eos, t.event)
	return append([]byte{}, t.out...), err
}

func (t *chatAnthropic) event(ev SSEEvent) {
	t.usage.observe(ev.Data)
	var e anthropic.StreamEvent
	if json.Unmarshal(ev.Data, &e) != nil {
		return
	}
	var d anthropic.StreamDelta
	if len(e.Delta) > 0 {
		_ = json.Unmarshal(e.Delta, &d)
	}
	switch e.Type {
	case "message_start":
		if e.Message != nil {
			t.id, t.head = e.Message.ID, nil
		}
		t.chunk(`{"role":"assistant","content":""}`, "")
	case "content_block_start":
		if e.Block != nil && e.Block.Type == "tool_use" {
			if t.tools == nil {
				t.tools = map[int64]int{}
			}
			k := t.nextTool
			t.tools[e.Index] = k
			t.nextTool++
			id, _ := json.Marshal(e.Block.ID)
			name, _ := json.Marshal(e.Block.Name)
			t.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"id":`+string(id)+`,"type":"function","function":{"name":`+string(name)+`,"arguments":""}}]}`, "")
		}
	case "content_block_delta":
		switch d.Type {
		case "text_delta":
			s, _ := json.Marshal(d.Text)
			t.chunk(`{"content":`+string(s)+`}`, "")
		case "thinking_delta":
			if d.Thinking != "" {
				s, _ := json.Marshal(d.Thinking)
				t.chunk(`{"reasoning_content":`+string(s)+`}`, "")
			}
		case "signature_delta":
			if d.Signature != "" {
				s, _ := json.Marshal(d.Signature)
				t.chunk(`{"thinking_blocks":[{"type":"thinking","thinking":"","signature":`+string(s)+`}]}`, "")
			}
		case "input_json_delta":
			k, ok := t.tools[e.Index]
			if !ok || d.PartialJSON == "" {
				return
			}
			s, _ := json.Marshal(d.PartialJSON)
			t.chunk(`{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"function":{"arguments":`+string(s)+`}}]}`, "")
		}
	case "message_delta":
		if d.StopReason != "" {
			t.chunk(`{}`, finishReason(d.StopReason))
		}
	case "message_stop":
		if t.includeUsage {
			u, _ := t.usage.result()
			usage, _ := json.Marshal(openAIUsageOf(anthropicUsage{
				InputTokens: u.Input, OutputTokens: u.Output,
				CacheReadInputTokens: u.CachedInput, CacheCreationInputTokens: u.CacheWrite,
			}))
			t.out = append(t.out, "data: "...)
			t.out = append(t.out, t.chunkHead()...)
			t.out = append(t.out, `"choices":[],"usage":`...)
			t.out = append(t.out, usage...)
			t.out = append(t.out, "}\n\n"...)
		}
		t.out = append(t.out, "data: [DONE]\n\n"...)
	case "error":
		var d anthropicErrorDetail
		_ = json.Unmarshal(e.Error, &d)
		msg, _ := json.Marshal(redactSecrets(d.Message, t.apiKey))
		typ, _ := json.Marshal(d.Type)
		t.raw(`{"error":{"message":` + string(msg) + `,"type":` + string(typ) + `,"param":null,"code":null}}`)
	}
}

// chunkHead is head, made on first use.
func (t *chatAnthropic) chunkHead() []byte {
	if t.head == nil {
		id, _ := json.Marshal(t.id)
		model, _ := json.Marshal(t.model)
		h := append([]byte(`{"id":`), id...)
		h = append(h, `,"object":"chat.completion.chunk","created":`...)
		h = strconv.AppendInt(h, t.created, 10)
		h = append(h, `,"model":`...)
		h = append(h, model...)
		t.head = append(h, ',')
	}
	return t.head
}

// chunk appends one chat.completion.chunk event with the delta and finish reason.
func (t *chatAnthropic) chunk(delta, finish string) {
	t.out = append(t.out, "data: "...)
	t.out = append(t.out, t.chunkHead()...)
	t.out = append(t.out, `"choices":[{"index":0,"delta":`...)
	t.out = append(t.out, delta...)
	t.out = append(t.out, `,"finish_reason":`...)
	if finish != "" {
		t.out = append(t.out, '"')
		t.out = append(t.out, finish...)
		t.out = append(t.out, '"')
	} else {
		t.out = append(t.out, "null"...)
	}
	t.out = append(t.out, "}]}\n\n"...)
}

func (t *chatAnthropic) raw(data string) {
	t.out = append(t.out, "data: "...)
	t.out = append(t.out, data...)
	t.out = append(t.out, "\n\n"...)
}

// StreamUsage is the usage of message_start and the last message_delta.
func (t *chatAnthropic) StreamUsage() (kernel.Usage, bool) { return t.usage.result() }

// Error converts an Anthropic error into OpenAI's error shape.
func (t *chatAnthropic) Error(status int, body []byte) []byte {
	return upstreamAnthropicError(status, body, t.apiKey).OpenAIBody()
}
