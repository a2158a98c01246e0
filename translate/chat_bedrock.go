package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/schema/openai"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/bedrock"
)

// chatBedrock serves OpenAI's chat completions API from a Bedrock deployment
// with Converse (ConverseStream for streams): system and developer messages →
// system, images (base64 data URLs) → image blocks, tool calls → toolUse
// blocks, tool messages → toolResult blocks, tools → toolConfig,
// tool_choice → toolChoice (none keeps the tools and lets the model choose:
// Converse has no "none"), max tokens, temperature, top_p and stop →
// inferenceConfig. The reply and the event stream become chat completions
// (reasoning as reasoning_content); usage comes from usage / the metadata
// event.
type chatBedrock struct {
	apiKey       string
	includeUsage bool
	created      int64
	model        string

	ev      bedrockEvents
	cc      chatChunks
	out     []byte
	started bool
	tools   map[int]int // content block index → tool call index
	done    bool
}

var _ Translator = (*chatBedrock)(nil)

// Request builds the Converse request.
func (t *chatBedrock) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.includeUsage, t.created, t.model = in.IncludeUsage, anthropicNow().Unix(), in.Model
	t.ev.onEvent, t.ev.onError = t.event, t.streamError
	var req openai.ChatRequest // shared OpenAI chat request type
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid chat completions request: %w", err)
	}
	if req.N != nil && *req.N > 1 {
		return nil, errors.New("n: only one choice is supported by this model")
	}
	out := bedrock.ConverseRequest{Messages: []bedrock.Message{}}
	for i, m := range req.Messages {
		if err := appendChatToBedrock(&out, m); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	stops, err := stopSequences(req.Stop)
	if err != nil {
		return nil, err
	}
	cfg := &bedrock.InferenceConfig{MaxTokens: geminiMaxTokens(in), Temperature: req.Temperature, TopP: req.TopP, StopSequences: stops}
	if cfg.MaxTokens != nil || cfg.Temperature != nil || cfg.TopP != nil || len(stops) > 0 {
		out.InferenceConfig = cfg
	}
	if len(req.Tools) > 0 {
		var names, descs []string
		var schemas []json.RawMessage
		for _, tool := range req.Tools {
			if tool.Type != "" && tool.Type != "function" {
				return nil, fmt.Errorf("tools: type %q is not supported by this model", tool.Type)
			}
			names, descs, schemas = append(names, tool.Function.Name), append(descs, tool.Function.Description), append(schemas, tool.Function.Parameters)
		}
		out.ToolConfig = &bedrock.ToolConfig{Tools: bedrockTools(names, descs, schemas)}
		choice, err := geminiToolChoice(req.ToolChoice) // the same reading of tool_choice
		if err != nil {
			return nil, err
		}
		if choice != nil {
			switch {
			case len(choice.AllowedFunctionNames) == 1:
				out.ToolConfig.ToolChoice, _ = json.Marshal(map[string]any{"tool": map[string]string{"name": choice.AllowedFunctionNames[0]}})
			case choice.Mode == "ANY":
				out.ToolConfig.ToolChoice = json.RawMessage(`{"any":{}}`)
			case choice.Mode == "AUTO":
				out.ToolConfig.ToolChoice = json.RawMessage(`{"auto":{}}`)
			}
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	op := "converse"
	if in.Stream {
		op = "converse-stream"
	}
	return &Outbound{Path: bedrockPath(target, in, op), Body: body}, nil
}

// appendChatToBedrock adds one OpenAI message.
func appendChatToBedrock(out *bedrock.ConverseRequest, m openai.ChatMessage) error {
	switch m.Role {
	case "system", "developer":
		text, err := contentText(m.Content)
		if err != nil {
			return err
		}
		if text != "" {
			out.System = append(out.System, bedrock.SystemBlock{Text: text})
		}
		return nil
	case "user", "assistant":
		blocks, err := contentBlocks(m.Content, m.Role == "user")
		if err != nil {
			return err
		}
		var cb []bedrock.ContentBlock
		for _, b := range blocks {
			if b.Type == "image" {
				img, err := bedrockImage(b.Source)
				if err != nil {
					return err
				}
				cb = append(cb, *img)
				continue
			}
			cb = append(cb, textBlock(b.Text))
		}
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Function.Arguments)
			if strings.TrimSpace(tc.Function.Arguments) == "" {
				args = json.RawMessage(`{}`)
			} else if !json.Valid(args) {
				return fmt.Errorf("tool call %s: arguments are not JSON", tc.ID)
			}
			cb = append(cb, bedrock.ContentBlock{ToolUse: &bedrock.ToolUseBlock{ToolUseID: tc.ID, Name: tc.Function.Name, Input: jsonObject(args)}})
		}
		appendBedrockTurn(out, m.Role, cb)
		return nil
	case "tool":
		text, err := contentText(m.Content)
		if err != nil {
			return err
		}
		appendBedrockTurn(out, bedrock.RoleUser, []bedrock.ContentBlock{{ToolResult: &bedrock.ToolResultBlock{
			ToolUseID: m.ToolCallID, Content: []bedrock.ToolResultContent{{Text: text}},
		}}})
		return nil
	default:
		return fmt.Errorf("role %q is not supported", m.Role)
	}
}

// Response converts a Converse reply into a chat completion.
func (t *chatBedrock) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r bedrock.ConverseResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	u := bedrockKernelUsage(r.Usage)
	msg := openai.ChatReplyMessage{Role: "assistant"}
	var text strings.Builder
	hasText := false
	if m := r.Output.Message; m != nil {
		for _, b := range m.Content {
			switch {
			case b.Text != nil:
				text.WriteString(*b.Text)
				hasText = true
			case b.ToolUse != nil:
				tc := openai.ToolCall{ID: b.ToolUse.ToolUseID, Type: "function"}
				tc.Function.Name, tc.Function.Arguments = b.ToolUse.Name, toolArguments(b.ToolUse.Input)
				msg.ToolCalls = append(msg.ToolCalls, tc)
			case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
				msg.ReasoningContent += b.ReasoningContent.ReasoningText.Text
			}
		}
	}
	if hasText {
		s := text.String()
		msg.Content = &s
	}
	out, err := json.Marshal(geminiCompletion{
		ID: "chatcmpl-bedrock", Object: "chat.completion", Created: t.created, Model: t.model,
		Choices: []openai.ChatChoice{{Message: msg, FinishReason: bedrockFinishToOpenAI(r.StopReason)}},
		Usage:   openAIUsageOfKernel(u),
	})
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	if r.Usage == nil {
		return out, kernel.Usage{}, errNoUsage
	}
	return out, u, nil
}

// StreamChunk converts ConverseStream events into chat.completion.chunk
// events: the role chunk at messageStart, content, reasoning_content and
// tool-call deltas, the finish chunk at messageStop, the usage chunk (when
// asked for) and data: [DONE] at the metadata event (or the end).
func (t *chatBedrock) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.out = t.out[:0]
	err := t.ev.feed(chunk)
	if eos && !t.done && t.started {
		t.finish()
	}
	return append([]byte{}, t.out...), err
}

func (t *chatBedrock) begin() {
	if !t.started {
		t.started = true
		t.cc.begin("chatcmpl-bedrock", t.model, t.created)
		t.out = t.cc.chunk(t.out, `{"role":"assistant","content":""}`, "")
	}
}

func (t *chatBedrock) event(typ string, ev *bedrock.StreamEvent) {
	if t.done {
		return
	}
	t.begin()
	switch typ {
	case bedrock.EventContentBlockStart:
		if ev.Start != nil && ev.Start.ToolUse != nil {
			if t.tools == nil {
				t.tools = map[int]int{}
			}
			k := len(t.tools)
			t.tools[ev.ContentBlockIndex] = k
			id, _ := json.Marshal(ev.Start.ToolUse.ToolUseID)
			name, _ := json.Marshal(ev.Start.ToolUse.Name)
			t.out = t.cc.chunk(t.out, `{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"id":`+string(id)+`,"type":"function","function":{"name":`+string(name)+`,"arguments":""}}]}`, "")
		}
	case bedrock.EventContentBlockDelta:
		d := ev.Delta
		switch {
		case d == nil:
		case d.Text != nil && *d.Text != "":
			s, _ := json.Marshal(*d.Text)
			t.out = t.cc.chunk(t.out, `{"content":`+string(s)+`}`, "")
		case d.ToolUse != nil && d.ToolUse.Input != "":
			if k, ok := t.tools[ev.ContentBlockIndex]; ok {
				s, _ := json.Marshal(d.ToolUse.Input)
				t.out = t.cc.chunk(t.out, `{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"function":{"arguments":`+string(s)+`}}]}`, "")
			}
		case d.ReasoningContent != nil && d.ReasoningContent.Text != "":
			s, _ := json.Marshal(d.ReasoningContent.Text)
			t.out = t.cc.chunk(t.out, `{"reasoning_content":`+string(s)+`}`, "")
		}
	case bedrock.EventMessageStop:
		t.out = t.cc.chunk(t.out, `{}`, bedrockFinishToOpenAI(ev.StopReason))
	case bedrock.EventMetadata:
		t.finish()
	}
}

// finish writes the usage chunk (when asked for) and data: [DONE].
func (t *chatBedrock) finish() {
	t.done = true
	if t.includeUsage {
		u, _ := t.ev.result()
		usage, _ := json.Marshal(openAIUsageOfKernel(u))
		t.out = t.cc.usage(t.out, usage)
	}
	t.out = append(t.out, "data: [DONE]\n\n"...)
}

// streamError passes a stream exception as OpenAI's error event.
func (t *chatBedrock) streamError(status int, msg string) {
	e := &APIError{Status: status, Type: statusType(status), Message: msg}
	e.sanitizeUpstream(t.apiKey)
	t.out = append(t.out, "data: "...)
	t.out = append(t.out, e.OpenAIBody()...)
	t.out = append(t.out, "\n\n"...)
}

// StreamUsage is the metadata event's usage, or an estimate.
func (t *chatBedrock) StreamUsage() (kernel.Usage, bool) { return t.ev.result() }

// Error converts a Bedrock error into OpenAI's error shape.
func (t *chatBedrock) Error(status int, body []byte) []byte {
	return upstreamBedrockError(status, body, t.apiKey).OpenAIBody()
}
