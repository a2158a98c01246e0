package translate

import (
	"encoding/json"
	"fmt"

	"github.com/tollgate-ai/tollgate/schema/anthropic"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// messagesGemini serves Anthropic's Messages API from a Gemini deployment,
// so Anthropic clients such as Claude Code can use Gemini models: system →
// systemInstruction, text and image blocks → parts, tool_use → functionCall,
// tool_result → functionResponse (named after the tool_use it answers),
// tools → functionDeclarations (input_schema as parametersJsonSchema),
// tool_choice → toolConfig, thinking → thinkingConfig. The reply and the
// stream become a message and Messages events again (thoughts as thinking
// blocks). count_tokens is answered by the gateway's estimate.
type messagesGemini struct {
	apiKey string
	model  string // the client's model name, echoed in responses

	ev  geminiEvents
	aw  anthropicEventWriter
	out []byte
	// stream state
	started bool
	finish  string
	calls   int
}

var _ Translator = (*messagesGemini)(nil)

// geminiMessagesRequest is the part of a Messages request the Gemini
// translator reads.
type geminiMessagesRequest struct {
	anthropic.Request          // shared Anthropic request type
	TopK              *float64 `json:"top_k"`
	Thinking          *struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	} `json:"thinking"`
}

// Request builds the generateContent (or streamGenerateContent) request.
func (t *messagesGemini) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.model = target.APIKey, in.Model
	t.ev.onEvent, t.ev.onError = t.event, t.streamError
	t.aw.out = &t.out
	var req geminiMessagesRequest
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid messages request: %w", err)
	}
	out, err := messagesToGemini(&req.Request)
	if err != nil {
		return nil, err
	}
	cfg := &gemini.GenerationConfig{
		MaxOutputTokens: geminiMaxTokens(in), Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK,
		StopSequences: req.StopSequences,
	}
	if th := req.Thinking; th != nil && th.Type == "enabled" {
		b := th.BudgetTokens
		cfg.ThinkingConfig = &gemini.ThinkingConfig{ThinkingBudget: &b, IncludeThoughts: true}
	}
	if !emptyGenerationConfig(cfg) {
		out.GenerationConfig = cfg
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	method := GeminiGenerate
	if in.Stream {
		method = GeminiStream
	}
	return &Outbound{
		Path: geminiPath(target, in, method), Headers: geminiHeaders(target), Body: body,
		Remove: []string{HdrAnthropicVersion, HdrAnthropicBeta},
	}, nil
}

// messagesToGemini converts the system prompt, the turns, the tools and the
// tool choice.
func messagesToGemini(req *anthropic.Request) (*gemini.GenerateContentRequest, error) {
	out := &gemini.GenerateContentRequest{Contents: []gemini.Content{}}
	sys, err := systemText(req.System)
	if err != nil {
		return nil, err
	}
	if sys != "" {
		out.SystemInstruction = &gemini.Content{Parts: []gemini.Part{{Text: sys}}}
	}
	names := map[string]string{} // tool_use id → name
	for i, m := range req.Messages {
		if m.Role == roleSystem { // Claude Code sends them between turns: one systemInstruction, in order
			text, err := systemText(m.Content)
			if err != nil {
				return nil, fmt.Errorf("messages.%d: %w", i, err)
			}
			if text != "" {
				if out.SystemInstruction == nil {
					out.SystemInstruction = &gemini.Content{}
				}
				out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, gemini.Part{Text: text})
			}
			continue
		}
		parts, err := geminiPartsOfBlocks(m, names)
		if err != nil {
			return nil, fmt.Errorf("messages.%d: %w", i, err)
		}
		role := gemini.RoleUser
		if m.Role == "assistant" {
			role = gemini.RoleModel
		} else if m.Role != "user" {
			return nil, fmt.Errorf("messages.%d: role %q is not supported", i, m.Role)
		}
		appendGeminiTurn(out, role, parts)
	}
	var decls []gemini.FunctionDeclaration
	for _, tool := range req.Tools {
		decls = append(decls, gemini.FunctionDeclaration{Name: tool.Name, Description: tool.Description, ParametersJSONSchema: tool.InputSchema})
	}
	if len(decls) > 0 {
		out.Tools = []gemini.Tool{{FunctionDeclarations: decls}}
		if c := req.ToolChoice; c != nil {
			fc := &gemini.FunctionCallingConfig{Mode: gemini.ModeAuto}
			switch c.Type {
			case "any":
				fc.Mode = gemini.ModeAny
			case "tool":
				fc.Mode, fc.AllowedFunctionNames = gemini.ModeAny, []string{c.Name}
			case "none":
				fc.Mode = gemini.ModeNone
			}
			out.ToolConfig = &gemini.ToolConfig{FunctionCallingConfig: fc}
		}
	}
	return out, nil
}

// geminiPartsOfBlocks converts one turn's content blocks; thinking blocks
// are dropped (Gemini's thoughts cannot be replayed without their signature).
func geminiPartsOfBlocks(m anthropic.Message, names map[string]string) ([]gemini.Part, error) {
	blocks, err := blocksOf(m.Content)
	if err != nil {
		return nil, err
	}
	var parts []gemini.Part
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if b.Text != "" {
				parts = append(parts, gemini.Part{Text: b.Text})
			}
		case "image":
			switch {
			case b.Source == nil:
				return nil, fmt.Errorf("image block without source")
			case b.Source.Type == "base64":
				parts = append(parts, gemini.Part{InlineData: &gemini.Blob{MimeType: b.Source.MediaType, Data: b.Source.Data}})
			default:
				parts = append(parts, gemini.Part{FileData: &gemini.FileData{FileURI: b.Source.URL}})
			}
		case "tool_use":
			names[b.ID] = b.Name
			parts = append(parts, gemini.Part{FunctionCall: &gemini.FunctionCall{Name: b.Name, Args: jsonObject(b.Input)}})
		case "tool_result":
			name, ok := names[b.ToolUseID]
			if !ok {
				return nil, fmt.Errorf("tool_result %q answers no earlier tool_use", b.ToolUseID)
			}
			text, err := systemText(b.Content)
			if err != nil {
				return nil, fmt.Errorf("tool_result content must be a string or text blocks")
			}
			resp := functionResponse(text)
			if b.IsError {
				resp, _ = json.Marshal(map[string]string{"error": text})
			}
			parts = append(parts, gemini.Part{FunctionResponse: &gemini.FunctionResponse{Name: name, Response: resp}})
		case "thinking", "redacted_thinking":
		default:
			return nil, fmt.Errorf("content block type %q is not supported by this model", b.Type)
		}
	}
	return parts, nil
}

// --- response -----------------------------------------------------------------

// anGeminiBlock is a content block of a message written from Gemini's reply
// (thinking included, which anthropic.ReplyBlock has no field for).
type anGeminiBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type anGeminiMessage struct {
	ID           string          `json:"id"`
	Type         string          `json:"type"`
	Role         string          `json:"role"`
	Model        string          `json:"model"`
	Content      []anGeminiBlock `json:"content"`
	StopReason   *string         `json:"stop_reason"`
	StopSequence *string         `json:"stop_sequence"`
	Usage        anthropic.Usage `json:"usage"`
}

// anthropicUsageOfKernel reports kernel usage the Anthropic way (input
// excludes cache reads; output includes thinking).
func anthropicUsageOfKernel(u kernel.Usage) anthropic.Usage {
	return anthropic.Usage{
		InputTokens: u.Input, CacheReadInputTokens: u.CachedInput, CacheCreationInputTokens: u.CacheWrite,
		OutputTokens: u.Output + u.Reasoning,
	}
}

// Response converts a GenerateContentResponse into a message.
func (t *messagesGemini) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r gemini.GenerateContentResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	u := geminiKernelUsage(r.UsageMetadata)
	msg := anGeminiMessage{ID: "msg_" + r.ResponseID, Type: "message", Role: "assistant", Model: t.model, Content: []anGeminiBlock{}, Usage: anthropicUsageOfKernel(u)}
	stop := "refusal" // no candidate: the prompt was blocked
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		calls := 0
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					msg.Content = append(msg.Content, anGeminiBlock{
						Type: "tool_use", ID: geminiCallID(p.FunctionCall, calls), Name: p.FunctionCall.Name, Input: jsonObject(p.FunctionCall.Args),
					})
					calls++
				case p.Thought:
					text, sig := p.Text, p.ThoughtSignature
					msg.Content = append(msg.Content, anGeminiBlock{Type: "thinking", Thinking: &text, Signature: &sig})
				case p.Text != "":
					text := p.Text
					msg.Content = append(msg.Content, anGeminiBlock{Type: "text", Text: &text})
				}
			}
		}
		stop = geminiFinishToAnthropic(c.FinishReason, calls > 0)
	}
	msg.StopReason = &stop
	out, err := json.Marshal(msg)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	if r.UsageMetadata == nil {
		return out, kernel.Usage{}, errNoUsage
	}
	return out, u, nil
}

// --- stream -------------------------------------------------------------------

// StreamChunk converts Gemini SSE events into Messages events: message_start
// at the first event, a thinking, text or tool_use block per run of parts of
// that kind (each function call a whole tool_use block), and at the end of
// the stream message_delta (stop reason, usage) and message_stop.
func (t *messagesGemini) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.out = t.out[:0]
	err := t.ev.feed(chunk, eos)
	if eos && t.started && !t.aw.ended {
		u, _ := t.ev.usage.result()
		t.aw.end(geminiFinishToAnthropic(t.finish, t.calls > 0), anthropicUsageOfKernel(u))
	}
	return append([]byte{}, t.out...), err
}

func (t *messagesGemini) event(r *gemini.GenerateContentResponse) {
	if !t.started {
		t.started = true
		u, _ := t.ev.usage.result()
		au := anthropicUsageOfKernel(u)
		au.OutputTokens = 0
		t.aw.start("msg_"+r.ResponseID, t.model, au)
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			t.finish = gemini.FinishSafety
		}
		return
	}
	c := r.Candidates[0]
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				t.aw.toolUse(geminiCallID(p.FunctionCall, t.calls), p.FunctionCall.Name, geminiArgs(p.FunctionCall.Args))
				t.calls++
			case p.Text == "":
			case p.Thought:
				t.aw.thinking(p.Text)
			default:
				t.aw.text(p.Text)
			}
		}
	}
	if c.FinishReason != "" {
		t.finish = c.FinishReason
	}
}

// streamError passes an error event as Anthropic's error event.
func (t *messagesGemini) streamError(data []byte) {
	e := upstreamGeminiError(500, data, t.apiKey)
	t.aw.emit("error", map[string]any{"type": "error", "error": anthropicErrorDetail{Type: anthropicAPIError, Message: e.Message}})
}

// StreamUsage is the usage of the last usageMetadata, or an estimate.
func (t *messagesGemini) StreamUsage() (kernel.Usage, bool) { return t.ev.usage.result() }

// Error converts a Google error into Anthropic's shape.
func (t *messagesGemini) Error(status int, body []byte) []byte {
	return AnthropicErrorBody(upstreamGeminiError(status, body, t.apiKey))
}

// anthropicEventWriter writes a Messages event stream for translators from
// providers whose streams carry whole parts: it opens and closes the content
// blocks as the kind of content changes.
type anthropicEventWriter struct {
	out      *[]byte
	block    int    // index of the open block, -1 when none
	blockTyp string // its type
	next     int
	ended    bool
}

func (w *anthropicEventWriter) emit(name string, data any) {
	b, err := json.Marshal(data)
	if err != nil {
		return
	}
	*w.out = AppendSSEEvent(*w.out, name, b)
}

// start writes message_start with the input side of the usage.
func (w *anthropicEventWriter) start(id, model string, u anthropic.Usage) {
	w.block = -1
	w.emit("message_start", map[string]any{"type": "message_start", "message": anthropic.ReplyMessage{
		ID: id, Type: "message", Role: "assistant", Model: model, Content: []anthropic.ReplyBlock{}, Usage: u,
	}})
}

func (w *anthropicEventWriter) closeBlock() {
	if w.block >= 0 {
		w.emit("content_block_stop", map[string]any{"type": "content_block_stop", "index": w.block})
		w.block = -1
	}
}

func (w *anthropicEventWriter) open(typ string, block any) {
	w.closeBlock()
	w.block, w.blockTyp = w.next, typ
	w.next++
	w.emit("content_block_start", map[string]any{"type": "content_block_start", "index": w.block, "content_block": block})
}

func (w *anthropicEventWriter) text(s string) {
	if w.block < 0 || w.blockTyp != "text" {
		w.open("text", map[string]any{"type": "text", "text": ""})
	}
	w.emit("content_block_delta", anthropic.ContentBlockDeltaEvent{Delta: anthropic.BlockDelta{Text: s, Type: "text_delta"}, Index: w.block, Type: "content_block_delta"})
}

func (w *anthropicEventWriter) thinking(s string) {
	if w.block < 0 || w.blockTyp != "thinking" {
		w.open("thinking", map[string]any{"type": "thinking", "thinking": "", "signature": ""})
	}
	w.emit("content_block_delta", map[string]any{
		"type": "content_block_delta", "index": w.block,
		"delta": map[string]any{"type": "thinking_delta", "thinking": s},
	})
}

// toolUse writes one whole tool_use block.
func (w *anthropicEventWriter) toolUse(id, name, args string) {
	w.openTool(id, name)
	w.inputDelta(args)
	w.closeBlock()
}

// openTool opens a tool_use block whose input follows in inputDelta calls.
func (w *anthropicEventWriter) openTool(id, name string) {
	w.open("tool_use", map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}})
}

// inputDelta writes a piece of the open tool_use block's input JSON.
func (w *anthropicEventWriter) inputDelta(partial string) {
	if w.block >= 0 && w.blockTyp == "tool_use" && partial != "" {
		w.emit("content_block_delta", anthropic.ContentBlockDeltaEvent{Delta: anthropic.BlockDelta{PartialJSON: partial, Type: "input_json_delta"}, Index: w.block, Type: "content_block_delta"})
	}
}

// end writes message_delta and message_stop.
func (w *anthropicEventWriter) end(stop string, u anthropic.Usage) {
	w.closeBlock()
	w.emit("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": u,
	})
	w.emit("message_stop", map[string]any{"type": "message_stop"})
	w.ended = true
}
