package translate

import (
	"encoding/json"
	"fmt"

	"github.com/tollgate-ai/tollgate/schema/anthropic"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/bedrock"
)

// messagesBedrock serves Anthropic's Messages API from a Bedrock deployment
// with Converse (ConverseStream): system → system, text and base64 image
// blocks → text and image blocks, tool_use → toolUse, tool_result →
// toolResult (is_error → status "error"), tools → toolConfig, tool_choice →
// toolChoice, max_tokens, temperature, top_p, stop_sequences →
// inferenceConfig, thinking → additionalModelRequestFields (Claude on
// Bedrock). The reply and the event stream become a message and Messages
// events; cache reads and writes are reported as Anthropic reports them.
// count_tokens is the gateway's estimate.
type messagesBedrock struct {
	apiKey string
	model  string

	ev      bedrockEvents
	aw      anthropicEventWriter
	out     []byte
	started bool
	stop    string
	kinds   map[int]string // content block index → "tool_use" when it is one
}

var _ Translator = (*messagesBedrock)(nil)

// Request builds the Converse request.
func (t *messagesBedrock) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.model = in.Model
	t.ev.onEvent, t.ev.onError = t.event, t.streamError
	t.aw.out = &t.out
	var req geminiMessagesRequest // the Messages request fields every translator reads, thinking included
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid messages request: %w", err)
	}
	out := bedrock.ConverseRequest{Messages: []bedrock.Message{}}
	sys, err := systemText(req.System)
	if err != nil {
		return nil, err
	}
	if sys != "" {
		out.System = []bedrock.SystemBlock{{Text: sys}}
	}
	for i, m := range req.Messages {
		if m.Role == roleSystem { // Claude Code sends them between turns: Converse has one system list
			text, err := systemText(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages.%d: %w", i, err)
			}
			if text != "" {
				out.System = append(out.System, bedrock.SystemBlock{Text: text})
			}
			continue
		}
		blocks, err := bedrockBlocksOfMessage(m)
		if err != nil {
			return nil, fmt.Errorf("messages.%d: %w", i, err)
		}
		if m.Role != bedrock.RoleUser && m.Role != bedrock.RoleAssistant {
			return nil, fmt.Errorf("messages.%d: role %q is not supported", i, m.Role)
		}
		appendBedrockTurn(&out, m.Role, blocks)
	}
	max := anthropicMaxTokens(in, target)
	out.InferenceConfig = &bedrock.InferenceConfig{MaxTokens: &max, Temperature: req.Temperature, TopP: req.TopP, StopSequences: req.StopSequences}
	if len(req.Tools) > 0 {
		names, descs, schemas := make([]string, len(req.Tools)), make([]string, len(req.Tools)), make([]json.RawMessage, len(req.Tools))
		for i, tool := range req.Tools {
			names[i], descs[i], schemas[i] = tool.Name, tool.Description, tool.InputSchema
		}
		out.ToolConfig = &bedrock.ToolConfig{Tools: bedrockTools(names, descs, schemas)}
		if c := req.ToolChoice; c != nil {
			switch c.Type {
			case "any":
				out.ToolConfig.ToolChoice = json.RawMessage(`{"any":{}}`)
			case "tool":
				out.ToolConfig.ToolChoice, _ = json.Marshal(map[string]any{"tool": map[string]string{"name": c.Name}})
			case "auto":
				out.ToolConfig.ToolChoice = json.RawMessage(`{"auto":{}}`)
			}
		}
	}
	if th := req.Thinking; th != nil && th.Type == "enabled" {
		out.AdditionalModelRequestFields, _ = json.Marshal(map[string]any{"thinking": th})
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	op := "converse"
	if in.Stream {
		op = "converse-stream"
	}
	return &Outbound{Path: bedrockPath(target, in, op), Body: body, Remove: []string{HdrAnthropicVersion, HdrAnthropicBeta}}, nil
}

// bedrockBlocksOfMessage converts one turn's blocks; thinking blocks with a
// signature become reasoningContent (Claude on Bedrock replays them).
func bedrockBlocksOfMessage(m anthropic.Message) ([]bedrock.ContentBlock, error) {
	blocks, err := blocksOf(m.Content)
	if err != nil {
		return nil, err
	}
	var out []bedrock.ContentBlock
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != "" {
				out = append(out, textBlock(b.Text))
			}
		case "image":
			img, err := bedrockImage(b.Source)
			if err != nil {
				return nil, err
			}
			out = append(out, *img)
		case "tool_use":
			out = append(out, bedrock.ContentBlock{ToolUse: &bedrock.ToolUseBlock{ToolUseID: b.ID, Name: b.Name, Input: jsonObject(b.Input)}})
		case "tool_result":
			text, err := systemText(b.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result content must be a string or text blocks")
			}
			tr := &bedrock.ToolResultBlock{ToolUseID: b.ToolUseID, Content: []bedrock.ToolResultContent{{Text: text}}}
			if b.IsError {
				tr.Status = "error"
			}
			out = append(out, bedrock.ContentBlock{ToolResult: tr})
		case "thinking", "redacted_thinking":
		default:
			return nil, fmt.Errorf("content block type %q is not supported by this model", b.Type)
		}
	}
	return out, nil
}

// Response converts a Converse reply into a message.
func (t *messagesBedrock) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r bedrock.ConverseResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	u := bedrockKernelUsage(r.Usage)
	msg := anGeminiMessage{ID: "msg_bedrock", Type: "message", Role: "assistant", Model: t.model, Content: []anGeminiBlock{}, Usage: anthropicUsageOfKernel(u)}
	if m := r.Output.Message; m != nil {
		for _, b := range m.Content {
			switch {
			case b.Text != nil:
				msg.Content = append(msg.Content, anGeminiBlock{Type: "text", Text: b.Text})
			case b.ToolUse != nil:
				msg.Content = append(msg.Content, anGeminiBlock{Type: "tool_use", ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Input: jsonObject(b.ToolUse.Input)})
			case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
				rt := b.ReasoningContent.ReasoningText
				text, sig := rt.Text, rt.Signature
				msg.Content = append(msg.Content, anGeminiBlock{Type: "thinking", Thinking: &text, Signature: &sig})
			}
		}
	}
	stop := bedrockStopToAnthropic(r.StopReason)
	msg.StopReason = &stop
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	if r.Usage == nil {
		return out, kernel.Usage{}, errNoUsage
	}
	return out, u, nil
}

// StreamChunk converts ConverseStream events into Messages events; the
// message ends (message_delta with the usage, message_stop) at the metadata
// event, or at the end of the stream.
func (t *messagesBedrock) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.out = t.out[:0]
	err := t.ev.feed(chunk)
	if eos && t.started && !t.aw.ended {
		t.end()
	}
	return append([]byte{}, t.out...), err
}

func (t *messagesBedrock) event(typ string, ev *bedrock.StreamEvent) {
	if t.aw.ended {
		return
	}
	if !t.started {
		t.started = true
		t.aw.start("msg_bedrock", t.model, anthropic.Usage{})
	}
	switch typ {
	case bedrock.EventContentBlockStart:
		if ev.Start != nil && ev.Start.ToolUse != nil {
			if t.kinds == nil {
				t.kinds = map[int]string{}
			}
			t.kinds[ev.ContentBlockIndex] = "tool_use"
			t.aw.openTool(ev.Start.ToolUse.ToolUseID, ev.Start.ToolUse.Name)
		}
	case bedrock.EventContentBlockDelta:
		d := ev.Delta
		switch {
		case d == nil:
		case d.Text != nil && *d.Text != "":
			t.aw.text(*d.Text)
		case d.ToolUse != nil:
			t.aw.inputDelta(d.ToolUse.Input)
		case d.ReasoningContent != nil && d.ReasoningContent.Text != "":
			t.aw.thinking(d.ReasoningContent.Text)
		}
	case bedrock.EventContentBlockStop:
		t.aw.closeBlock()
	case bedrock.EventMessageStop:
		t.stop = ev.StopReason
	case bedrock.EventMetadata:
		t.end()
	}
}

func (t *messagesBedrock) end() {
	u, _ := t.ev.result()
	t.aw.end(bedrockStopToAnthropic(t.stop), anthropicUsageOfKernel(u))
}

// streamError passes a stream exception as Anthropic's error event.
func (t *messagesBedrock) streamError(status int, msg string) {
	e := &APIError{Status: status, Message: msg}
	e.sanitizeUpstream(t.apiKey)
	t.aw.emit("error", map[string]any{"type": "error", "error": anthropicErrorDetail{Type: anthropicStatusType(status), Message: e.Message}})
}

// StreamUsage is the metadata event's usage, or an estimate.
func (t *messagesBedrock) StreamUsage() (kernel.Usage, bool) { return t.ev.result() }

// Error converts a Bedrock error into Anthropic's shape.
func (t *messagesBedrock) Error(status int, body []byte) []byte {
	return AnthropicErrorBody(upstreamBedrockError(status, body, t.apiKey))
}

func (t *messagesBedrock) StreamContentType() string { return sseContentType }
