package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/openai"
)

// responsesNow is the clock of created_at (tests fix it).
var responsesNow = time.Now

// responsesViaChat serves the Responses API from a provider that speaks only
// chat completions (an OpenAI-compatible server that does not declare the
// Responses API) or, through the chat → Messages translator, Anthropic: the
// request becomes a chat completions request, which the inner chat translator
// sends on exactly as a client's chat request (model renamed, max tokens
// clamped, usage asked for); the chat completion or chunk stream it returns
// becomes a response object or the Responses event stream. Usage and
// accounting are the inner translator's, as for chat.
//
// Input items map to chat messages: message items by role (system and
// developer → system, input_text/output_text → text, input_image → an
// image_url part), function_call items → the assistant's tool_calls,
// function_call_output items → tool messages; reasoning items are dropped
// for a chat upstream, which takes no reasoning input, and become thinking
// blocks again for Anthropic (responses_reasoning.go). Function tools,
// tool_choice, parallel_tool_calls, max_output_tokens, temperature, top_p, text.format
// (json_schema, json_object) and user map to their chat members; built-in
// tools are left out unless tool_choice forces one, which is refused with a
// 400 (responses_tools.go). Output: one message item with an output_text
// part, then one function_call item per tool call.
type responsesViaChat struct {
	inner Translator

	// Set by Request.
	req     openai.ResponsesRequest
	History []openai.InputItem // prepended from previous_response_id
	input   []openai.InputItem // the request's own input, as items
	id      string             // resp_…
	base    string             // the id without its prefix, for item ids
	model   string             // the client's model name
	created int64
	stream  bool

	// dropped names the built-in tools left out of the request.
	dropped []string

	// done, when set, receives the final response (to store it).
	Done func(r *openai.Response, input []openai.InputItem)

	// Stream state.
	sse     SSEParser
	out     []byte
	seq     int64
	started bool
	ended   bool
	items   []openai.OutputItem
	cur     int         // index in items of the open item, -1 when none
	tools   map[int]int // chat tool-call index → index in items
	finish  string
	usage   *openai.ResponsesUsage
	// thought is the reasoning text of the reply (for the reasoning_tokens
	// estimate when the upstream reports none).
	thought int64
}

var _ Translator = (*responsesViaChat)(nil)

func newResponsesViaChat(inner Translator) *responsesViaChat {
	return &responsesViaChat{inner: inner, cur: -1}
}

// --- request ------------------------------------------------------------------

// Request builds the chat completions request and hands it to the inner
// translator.
func (t *responsesViaChat) Request(in *Inbound, target *Target) (*Outbound, error) {
	if err := json.Unmarshal(in.Body, &t.req); err != nil {
		return nil, fmt.Errorf("invalid responses request: %w", err)
	}
	t.model, t.stream, t.created = in.Model, in.Stream, responsesNow().Unix()
	t.base = strings.ReplaceAll(in.RequestID, "-", "")
	if t.base == "" {
		t.base = "0"
	}
	t.id = "resp_" + t.base
	items, err := inputItems(t.req.Input)
	if err != nil {
		return nil, err
	}
	t.input = items
	body, err := t.chatRequest(in)
	if err != nil {
		return nil, err
	}
	chatIn, err := asChatInbound(in, body)
	if err != nil {
		return nil, err
	}
	return t.inner.Request(chatIn, target)
}

// inputItems reads input: a string is one user message.
func inputItems(raw json.RawMessage) ([]openai.InputItem, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		content, _ := json.Marshal(s)
		return []openai.InputItem{{Type: "message", Role: "user", Content: content}}, nil
	}
	var items []openai.InputItem
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("input must be a string or an array of input items")
	}
	return items, nil
}

// chatRequest is the chat completions body of the request.
func (t *responsesViaChat) chatRequest(in *Inbound) ([]byte, error) {
	r := &t.req
	out := openai.UpstreamChatRequest{
		Model:             in.Model,
		Temperature:       r.Temperature,
		TopP:              r.TopP,
		Stream:            in.Stream,
		ParallelToolCalls: r.ParallelToolCalls,
		User:              in.User,
	}
	if r.MaxOutputTokens != nil {
		out.MaxCompletionTokens = *r.MaxOutputTokens
	}
	effort, err := reasoningEffort(r.Reasoning)
	if err != nil {
		return nil, err
	}
	out.ReasoningEffort = effort
	if in.Stream {
		out.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	if len(r.Instructions) > 0 && string(r.Instructions) != "null" {
		var s string
		if json.Unmarshal(r.Instructions, &s) != nil {
			return nil, errors.New("instructions must be a string")
		}
		if s != "" {
			out.Messages = append(out.Messages, openai.UpstreamChatMessage{Role: "system", Content: s})
		}
	}
	all := append(append([]openai.InputItem{}, t.History...), t.input...)
	_, thinking := t.inner.(*chatAnthropic)
	for i, it := range all {
		var err error
		if it.Type == "reasoning" && thinking {
			out.Messages = appendReasoningItem(out.Messages, it)
			continue
		}
		if out.Messages, err = appendInputItem(out.Messages, it); err != nil {
			return nil, fmt.Errorf("input[%d]: %w", i-len(t.History), err)
		}
	}
	forced := forcedToolType(r.ToolChoice)
	for i, tool := range r.Tools {
		if tool.Type != "function" {
			if forced != "" && forced == tool.Type {
				return nil, fmt.Errorf("tools[%d]: the built-in tool %q is not supported by this model; only function tools are", i, tool.Type)
			}
			t.dropped = append(t.dropped, droppedToolName(tool))
			continue
		}
		ot := openai.Tool{Type: "function", Function: openai.FunctionDefinition{
			Name: tool.Name, Description: tool.Description, Parameters: tool.Parameters,
		}}
		out.Tools = append(out.Tools, ot)
	}
	choice, err := chatToolChoice(r.ToolChoice)
	if err != nil {
		return nil, err
	}
	if choice != nil && len(out.Tools) > 0 {
		out.ToolChoice = choice
	}
	if len(out.Tools) == 0 {
		out.ParallelToolCalls = nil
	}
	if r.Text != nil && r.Text.Format != nil {
		switch f := r.Text.Format; f.Type {
		case "", "text":
		case "json_object":
			out.ResponseFormat = map[string]string{"type": "json_object"}
		case "json_schema":
			out.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": jsonSchemaFormat{
				Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict,
			}}
		default:
			return nil, fmt.Errorf("text.format: type %q is not supported", f.Type)
		}
	}
	return json.Marshal(out)
}

// jsonSchemaFormat is chat's response_format.json_schema.
type jsonSchemaFormat struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// chatToolChoice maps the Responses tool_choice to chat's.
func chatToolChoice(raw json.RawMessage) (any, error) {
	switch s := strings.TrimSpace(string(raw)); s {
	case "", "null":
		return nil, nil
	case `"auto"`, `"none"`, `"required"`:
		return strings.Trim(s, `"`), nil
	}
	var c struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	if json.Unmarshal(raw, &c) != nil || c.Type != "function" || c.Name == "" {
		return nil, errors.New("tool_choice must be none, auto, required or a function tool")
	}
	return map[string]any{"type": "function", "function": map[string]string{"name": c.Name}}, nil
}

// appendInputItem adds one input item to the chat messages.
func appendInputItem(msgs []openai.UpstreamChatMessage, it openai.InputItem) ([]openai.UpstreamChatMessage, error) {
	switch it.Type {
	case "", "message":
		return appendInputMessage(msgs, it)
	case "function_call":
		call := openai.ToolCall{ID: it.CallID, Type: "function", Function: openai.FunctionCall{Name: it.Name, Arguments: it.Arguments}}
		if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" && msgs[n-1].ToolCallID == "" {
			msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, call)
			return msgs, nil
		}
		return append(msgs, openai.UpstreamChatMessage{Role: "assistant", ToolCalls: []openai.ToolCall{call}}), nil
	case "function_call_output":
		text, err := outputText(it.Output)
		if err != nil {
			return nil, err
		}
		return append(msgs, openai.UpstreamChatMessage{Role: "tool", ToolCallID: it.CallID, Content: text}), nil
	case "reasoning":
		return msgs, nil // a chat upstream takes no reasoning input
	default:
		return nil, fmt.Errorf("item type %q is not supported by this model", it.Type)
	}
}

// appendInputMessage adds a message item.
func appendInputMessage(msgs []openai.UpstreamChatMessage, it openai.InputItem) ([]openai.UpstreamChatMessage, error) {
	var parts []openai.UpstreamContentPart
	var s string
	if json.Unmarshal(it.Content, &s) == nil {
		parts = []openai.UpstreamContentPart{{Type: "text", Text: s}}
	} else {
		var in []openai.InputContent
		if err := json.Unmarshal(it.Content, &in); err != nil {
			return nil, errors.New("content must be a string or an array of content parts")
		}
		for _, p := range in {
			switch p.Type {
			case "input_text", "output_text", "text":
				parts = append(parts, openai.UpstreamContentPart{Type: "text", Text: p.Text})
			case "refusal":
				parts = append(parts, openai.UpstreamContentPart{Type: "text", Text: p.Refusal})
			case "input_image":
				if p.ImageURL == "" {
					return nil, errors.New("input_image: only image_url (an http(s) or data URL) is supported by this model")
				}
				parts = append(parts, openai.UpstreamContentPart{Type: "image_url", ImageURL: &openai.ImageURL{URL: p.ImageURL}})
			default:
				return nil, fmt.Errorf("content part type %q is not supported by this model", p.Type)
			}
		}
	}
	switch it.Role {
	case "user":
		return append(msgs, openai.UpstreamChatMessage{Role: "user", Content: flatten(parts)}), nil
	case "system", "developer":
		for _, p := range parts {
			if p.Type != "text" {
				return nil, errors.New("system messages take text only")
			}
		}
		return append(msgs, openai.UpstreamChatMessage{Role: "system", Content: flatten(parts)}), nil
	case "assistant":
		text := flatten(parts)
		if s, ok := text.(string); ok && s == "" {
			return msgs, nil
		}
		if n := len(msgs); n > 0 && onlyThinking(msgs[n-1]) {
			msgs[n-1].Content = text // the turn the reasoning item began
			return msgs, nil
		}
		return append(msgs, openai.UpstreamChatMessage{Role: "assistant", Content: text}), nil
	default:
		return nil, fmt.Errorf("role %q is not supported", it.Role)
	}
}

// outputText reads a function_call_output's output: a string, or content
// parts whose text is joined.
func outputText(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []openai.InputContent
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("output must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// --- response -----------------------------------------------------------------

// chatReply is the part of a chat completion the conversion reads.
type chatReply struct {
	openai.UpstreamChatCompletion
	Usage *openai.UpstreamChatUsage `json:"usage"`
}

// Response converts the inner translator's chat completion into a response
// object; the usage is the inner translator's.
func (t *responsesViaChat) Response(body []byte) ([]byte, kernel.Usage, error) {
	chat, u, uerr := t.inner.Response(body)
	if chat == nil {
		return nil, u, uerr
	}
	var c chatReply
	if err := json.Unmarshal(chat, &c); err != nil {
		return nil, kernel.Usage{}, err
	}
	if len(c.Choices) > 0 {
		ch := c.Choices[0]
		t.reasoningItems(ch.Message.ReasoningContent, ch.Message.ThinkingBlocks)
		if ch.Message.Content != nil && *ch.Message.Content != "" {
			t.items = append(t.items, t.messageItem(*ch.Message.Content, "completed"))
		}
		for i, tc := range ch.Message.ToolCalls {
			args := tc.Function.Arguments
			t.items = append(t.items, t.callItem(i, tc.ID, tc.Function.Name, &args, "completed"))
		}
		t.finish = ch.FinishReason
	}
	t.usage = t.withReasoning(responsesUsageOf(c.Usage))
	r := t.response(t.finalStatus())
	t.store(r)
	out, err := json.Marshal(r)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return out, u, uerr
}

// responsesUsageOf maps a chat usage to the Responses usage (nil when absent).
func responsesUsageOf(c *openai.UpstreamChatUsage) *openai.ResponsesUsage {
	if c == nil {
		return nil
	}
	u := &openai.ResponsesUsage{InputTokens: c.PromptTokens, OutputTokens: c.CompletionTokens}
	if c.PromptTokensDetails != nil {
		u.InputTokensDetails.CachedTokens = c.PromptTokensDetails.CachedTokens
	}
	if c.CompletionTokensDetails != nil {
		u.OutputTokensDetails.ReasoningTokens = c.CompletionTokensDetails.ReasoningTokens
	}
	u.TotalTokens = u.InputTokens + u.OutputTokens
	return u
}

func (t *responsesViaChat) messageItem(text, status string) openai.OutputItem {
	return openai.OutputItem{
		Type: "message", ID: "msg_" + t.base, Status: status, Role: "assistant",
		Content: &[]openai.OutputContent{outputTextPart(text)},
	}
}

func outputTextPart(text string) openai.OutputContent {
	return openai.OutputContent{Type: "output_text", Text: text, Annotations: []json.RawMessage{}, Logprobs: []json.RawMessage{}}
}

func (t *responsesViaChat) callItem(i int, callID, name string, args *string, status string) openai.OutputItem {
	if callID == "" {
		callID = "call_" + t.base + "_" + strconv.Itoa(i)
	}
	return openai.OutputItem{
		Type: "function_call", ID: "fc_" + t.base + "_" + strconv.Itoa(i), Status: status,
		CallID: callID, Name: name, Arguments: args,
	}
}

// finalStatus maps the finish reason: length and content_filter make the
// response incomplete.
func (t *responsesViaChat) finalStatus() string {
	switch t.finish {
	case "length", "content_filter":
		return "incomplete"
	default:
		return "completed"
	}
}

// response is the response object in a status, echoing the request.
func (t *responsesViaChat) response(status string) *openai.Response {
	r := &t.req
	out := &openai.Response{
		ID: t.id, Object: "response", CreatedAt: t.created, Status: status,
		Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, Model: t.model,
		Output: t.items, ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		Reasoning: r.Reasoning, Store: r.Store == nil || *r.Store,
		Temperature: r.Temperature, TopP: r.TopP, ToolChoice: r.ToolChoice, Tools: r.Tools,
		Truncation: "disabled", Metadata: r.Metadata,
	}
	if out.Output == nil {
		out.Output = []openai.OutputItem{}
	}
	if len(out.Instructions) == 0 {
		out.Instructions = json.RawMessage("null")
	}
	if len(out.Reasoning) == 0 {
		out.Reasoning = json.RawMessage("null")
	}
	if len(out.ToolChoice) == 0 {
		out.ToolChoice = json.RawMessage(`"auto"`)
	}
	if out.Tools == nil {
		out.Tools = []openai.ResponsesTool{}
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	out.Text = openai.ResponsesText{Format: &openai.TextFormat{Type: "text"}}
	if r.Text != nil && r.Text.Format != nil {
		out.Text.Format = r.Text.Format
	}
	if r.PreviousResponseID != "" {
		out.PreviousResponseID = &r.PreviousResponseID
	}
	if r.User != "" {
		out.User = &r.User
	}
	if status == "incomplete" {
		reason := "max_output_tokens"
		if t.finish == "content_filter" {
			reason = "content_filter"
		}
		out.IncompleteDetails = &openai.IncompleteDetails{Reason: reason}
	}
	if status != "in_progress" {
		out.Usage = t.usage
	}
	return out
}

// store hands a finished response to the done hook.
func (t *responsesViaChat) store(r *openai.Response) {
	if t.Done != nil && r.Store {
		t.Done(r, append(append([]openai.InputItem{}, t.History...), t.input...))
	}
}

// --- stream -------------------------------------------------------------------

// StreamChunk converts the inner translator's chat.completion.chunk events
// into the Responses events, in the order OpenAI sends them:
// response.created, response.in_progress, then per output item
// output_item.added, (content_part.added, output_text.delta…,
// output_text.done, content_part.done | function_call_arguments.delta…,
// function_call_arguments.done), output_item.done, and at the end
// response.completed (response.incomplete on length or content_filter,
// response.failed on an error event or a stream cut before its end), each
// with the next sequence_number.
func (t *responsesViaChat) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	chat, err := t.inner.StreamChunk(chunk, eos)
	t.out = t.out[:0]
	if ferr := t.sse.Feed(chat, t.event); ferr != nil && err == nil {
		err = ferr
	}
	if eos {
		if ferr := t.sse.Flush(t.event); ferr != nil && err == nil {
			err = ferr
		}
		if !t.ended {
			t.start()
			if t.finish == "" {
				t.fail("upstream_error", "The upstream stream ended before the response was complete.")
			} else {
				t.end()
			}
		}
	}
	return append([]byte{}, t.out...), err
}

// chatStreamEvent is the part of a chat chunk the conversion reads.
type chatStreamEvent struct {
	openai.UpstreamChatChunk
	Usage *openai.UpstreamChatUsage `json:"usage"`
}

func (t *responsesViaChat) event(ev SSEEvent) {
	if t.ended {
		return
	}
	if string(ev.Data) == "[DONE]" {
		t.start()
		t.end()
		return
	}
	var c chatStreamEvent
	if json.Unmarshal(ev.Data, &c) != nil {
		return
	}
	t.start()
	if len(c.Error) > 0 && string(c.Error) != "null" {
		e := upstreamOpenAIError(500, ev.Data, "")
		t.fail(e.Type, e.Message)
		return
	}
	if c.Usage != nil {
		t.usage = t.withReasoning(responsesUsageOf(c.Usage))
	}
	for _, ch := range c.Choices {
		if d := ch.Delta.ReasoningContent; d != "" {
			t.reasoningDelta(d)
		}
		for _, b := range ch.Delta.ThinkingBlocks {
			t.reasoningSignature(b.Signature)
		}
		if d := ch.Delta.Content; d != nil && *d != "" {
			t.textDelta(*d)
		}
		for _, tc := range ch.Delta.ToolCalls {
			t.toolDelta(tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			t.finish = *ch.FinishReason
		}
	}
}

// emit writes one event with the next sequence number.
func (t *responsesViaChat) emit(ev *openai.ResponseEvent) {
	ev.SequenceNumber = t.seq
	t.seq++
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	t.out = AppendSSEEvent(t.out, ev.Type, b)
}

func (t *responsesViaChat) start() {
	if t.started {
		return
	}
	t.started = true
	t.emit(&openai.ResponseEvent{Type: "response.created", Response: t.response("in_progress")})
	t.emit(&openai.ResponseEvent{Type: "response.in_progress", Response: t.response("in_progress")})
}

func intp(i int) *int { return &i }

func strp(s string) *string { return &s }

var noLogprobs = []json.RawMessage{}

func (t *responsesViaChat) textDelta(d string) {
	if t.cur < 0 || t.items[t.cur].Type != "message" {
		t.closeItem()
		t.cur = len(t.items)
		item := t.messageItem("", "in_progress")
		added := item
		added.Content = &[]openai.OutputContent{}
		t.items = append(t.items, item)
		t.emit(&openai.ResponseEvent{Type: "response.output_item.added", OutputIndex: intp(t.cur), Item: &added})
		part := outputTextPart("")
		t.emit(&openai.ResponseEvent{
			Type: "response.content_part.added", ItemID: item.ID, OutputIndex: intp(t.cur), ContentIndex: intp(0), Part: &part,
		})
	}
	it := &t.items[t.cur]
	(*it.Content)[0].Text += d
	t.emit(&openai.ResponseEvent{
		Type: "response.output_text.delta", ItemID: it.ID, OutputIndex: intp(t.cur), ContentIndex: intp(0),
		Delta: strp(d), Logprobs: &noLogprobs,
	})
}

func (t *responsesViaChat) toolDelta(k int, id, name, args string) {
	idx, ok := t.tools[k]
	if !ok {
		t.closeItem()
		if t.tools == nil {
			t.tools = map[int]int{}
		}
		idx = len(t.items)
		t.tools[k] = idx
		t.cur = idx
		empty := ""
		item := t.callItem(len(t.tools)-1, id, name, &empty, "in_progress")
		t.items = append(t.items, item)
		added := item
		t.emit(&openai.ResponseEvent{Type: "response.output_item.added", OutputIndex: intp(idx), Item: &added})
	}
	if args == "" {
		return
	}
	it := &t.items[idx]
	s := *it.Arguments + args
	it.Arguments = &s
	if idx == t.cur {
		t.emit(&openai.ResponseEvent{
			Type: "response.function_call_arguments.delta", ItemID: it.ID, OutputIndex: intp(idx), Delta: strp(args),
		})
	}
}

// closeItem ends the open item with its done events.
func (t *responsesViaChat) closeItem() { t.closeItemAs("completed") }

// closeItemAs ends the open item in a status (incomplete when the stream was
// cut).
func (t *responsesViaChat) closeItemAs(status string) {
	if t.cur < 0 {
		return
	}
	idx := t.cur
	t.cur = -1
	it := &t.items[idx]
	it.Status = status
	switch it.Type {
	case "message":
		part := (*it.Content)[0]
		t.emit(&openai.ResponseEvent{
			Type: "response.output_text.done", ItemID: it.ID, OutputIndex: intp(idx), ContentIndex: intp(0),
			Text: strp(part.Text), Logprobs: &noLogprobs,
		})
		t.emit(&openai.ResponseEvent{
			Type: "response.content_part.done", ItemID: it.ID, OutputIndex: intp(idx), ContentIndex: intp(0), Part: &part,
		})
	case "function_call":
		t.emit(&openai.ResponseEvent{
			Type: "response.function_call_arguments.done", ItemID: it.ID, OutputIndex: intp(idx),
			Name: it.Name, Arguments: it.Arguments,
		})
	case "reasoning":
		t.closeReasoning(idx)
	}
	done := *it
	t.emit(&openai.ResponseEvent{Type: "response.output_item.done", OutputIndex: intp(idx), Item: &done})
}

// end closes the open item and sends the final response event.
func (t *responsesViaChat) end() {
	t.closeItem()
	t.ended = true
	st := t.finalStatus()
	r := t.response(st)
	t.store(r)
	t.emit(&openai.ResponseEvent{Type: "response." + st, Response: r})
}

// fail sends an error event and response.failed.
func (t *responsesViaChat) fail(code, msg string) {
	t.closeItemAs("incomplete")
	t.ended = true
	t.emit(&openai.ResponseEvent{Type: "error", Code: strp(code), Message: msg})
	r := t.response("failed")
	r.Error = &openai.ResponseError{Code: code, Message: msg}
	t.emit(&openai.ResponseEvent{Type: "response.failed", Response: r})
}

// StreamUsage is the inner translator's.
func (t *responsesViaChat) StreamUsage() (kernel.Usage, bool) { return t.inner.StreamUsage() }

// Error is the inner translator's: OpenAI's error shape.
func (t *responsesViaChat) Error(status int, body []byte) []byte { return t.inner.Error(status, body) }
