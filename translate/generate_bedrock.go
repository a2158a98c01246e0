package translate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/bedrock"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// generateBedrock serves the Gemini API from a Bedrock deployment with
// Converse (ConverseStream): systemInstruction → system, contents →
// messages (functionCall → toolUse, functionResponse → toolResult,
// inlineData images → image blocks), functionDeclarations → toolConfig,
// toolConfig → toolChoice, generationConfig → inferenceConfig. The reply and
// the event stream become GenerateContentResponses (tool calls whole, when
// their block ends), usage as usageMetadata.
type generateBedrock struct {
	model string
	ev    bedrockEvents
	so    geminiStreamOut
	stop  string
	// tool is the toolUse block being streamed (its input gathered).
	tool  *gemini.FunctionCall
	input []byte
}

var _ Translator = (*generateBedrock)(nil)

// Request builds the Converse request.
func (t *generateBedrock) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.model = in.Model
	t.so.cs.sse = GeminiSSE(in.Path)
	t.ev.onEvent, t.ev.onError = t.event, t.streamError
	var req gemini.GenerateContentRequest
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid generateContent request: %w", err)
	}
	out := bedrock.ConverseRequest{Messages: []bedrock.Message{}}
	if sys := geminiText(req.SystemInstruction); sys != "" {
		out.System = []bedrock.SystemBlock{{Text: sys}}
	}
	var ids geminiCallIDs
	for i := range req.Contents {
		c := &req.Contents[i]
		blocks, err := anthropicBlocksOfGemini(c, &ids) // the same reading as for Anthropic
		if err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
		var cb []bedrock.ContentBlock
		for _, b := range blocks {
			switch b.Type {
			case "text":
				cb = append(cb, textBlock(b.Text))
			case "image":
				img, err := bedrockImage(b.Source)
				if err != nil {
					return nil, fmt.Errorf("contents[%d]: %w", i, err)
				}
				cb = append(cb, *img)
			case "tool_use":
				cb = append(cb, bedrock.ContentBlock{ToolUse: &bedrock.ToolUseBlock{ToolUseID: b.ID, Name: b.Name, Input: b.Input}})
			case "tool_result":
				var text string
				_ = json.Unmarshal(b.Content, &text)
				cb = append(cb, bedrock.ContentBlock{ToolResult: &bedrock.ToolResultBlock{ToolUseID: b.ToolUseID, Content: []bedrock.ToolResultContent{{Text: text}}}})
			}
		}
		role := bedrock.RoleUser
		if c.Role == gemini.RoleModel {
			role = bedrock.RoleAssistant
		}
		appendBedrockTurn(&out, role, cb)
	}
	var names, descs []string
	var schemas []json.RawMessage
	for _, tool := range req.Tools {
		for i := range tool.FunctionDeclarations {
			d := &tool.FunctionDeclarations[i]
			names, descs, schemas = append(names, d.Name), append(descs, d.Description), append(schemas, geminiToolSchema(d))
		}
	}
	if len(names) > 0 {
		out.ToolConfig = &bedrock.ToolConfig{Tools: bedrockTools(names, descs, schemas)}
		if tc := req.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
			switch fc := tc.FunctionCallingConfig; {
			case fc.Mode == gemini.ModeAny && len(fc.AllowedFunctionNames) == 1:
				out.ToolConfig.ToolChoice, _ = json.Marshal(map[string]any{"tool": map[string]string{"name": fc.AllowedFunctionNames[0]}})
			case fc.Mode == gemini.ModeAny:
				out.ToolConfig.ToolChoice = json.RawMessage(`{"any":{}}`)
			case fc.Mode == gemini.ModeAuto:
				out.ToolConfig.ToolChoice = json.RawMessage(`{"auto":{}}`)
			}
		}
	}
	cfg := &bedrock.InferenceConfig{MaxTokens: geminiMaxTokens(in)}
	if g := req.GenerationConfig; g != nil {
		if g.CandidateCount != nil && *g.CandidateCount > 1 {
			return nil, errors.New("generationConfig.candidateCount: only one candidate is supported by this model")
		}
		cfg.Temperature, cfg.TopP, cfg.StopSequences = g.Temperature, g.TopP, g.StopSequences
	}
	if cfg.MaxTokens != nil || cfg.Temperature != nil || cfg.TopP != nil || len(cfg.StopSequences) > 0 {
		out.InferenceConfig = cfg
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

// bedrockFinishToGemini maps a stop reason to a Gemini finish reason.
func bedrockFinishToGemini(s string) string {
	switch s {
	case bedrock.StopMaxTokens:
		return gemini.FinishMaxTokens
	case bedrock.StopGuardrailIntervened, bedrock.StopContentFiltered:
		return gemini.FinishSafety
	default:
		return gemini.FinishStop
	}
}

// Response converts a Converse reply into a GenerateContentResponse.
func (t *generateBedrock) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r bedrock.ConverseResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	var parts []gemini.Part
	if m := r.Output.Message; m != nil {
		for _, b := range m.Content {
			switch {
			case b.Text != nil:
				parts = append(parts, gemini.Part{Text: *b.Text})
			case b.ToolUse != nil:
				parts = append(parts, gemini.Part{FunctionCall: &gemini.FunctionCall{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Args: jsonObject(b.ToolUse.Input)}})
			case b.ReasoningContent != nil && b.ReasoningContent.ReasoningText != nil:
				parts = append(parts, gemini.Part{Text: b.ReasoningContent.ReasoningText.Text, Thought: true})
			}
		}
	}
	u := bedrockKernelUsage(r.Usage)
	out, err := json.Marshal(geminiReply("", t.model, parts, bedrockFinishToGemini(r.StopReason), &u))
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	if r.Usage == nil {
		return out, kernel.Usage{}, errNoUsage
	}
	return out, u, nil
}

// StreamChunk converts ConverseStream events into GenerateContentResponse
// events; the last one (finish reason, usage) at the metadata event.
func (t *generateBedrock) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.so.out = t.so.out[:0]
	err := t.ev.feed(chunk)
	if eos && !t.so.ended {
		t.end()
	}
	return append([]byte{}, t.so.out...), err
}

func (t *generateBedrock) event(typ string, ev *bedrock.StreamEvent) {
	if t.so.ended {
		return
	}
	switch typ {
	case bedrock.EventContentBlockStart:
		if ev.Start != nil && ev.Start.ToolUse != nil {
			t.tool, t.input = &gemini.FunctionCall{ID: ev.Start.ToolUse.ToolUseID, Name: ev.Start.ToolUse.Name}, t.input[:0]
		}
	case bedrock.EventContentBlockDelta:
		d := ev.Delta
		switch {
		case d == nil:
		case d.Text != nil && *d.Text != "":
			t.so.write(geminiReply("", t.model, []gemini.Part{{Text: *d.Text}}, "", nil))
		case d.ToolUse != nil && t.tool != nil:
			t.input = append(t.input, d.ToolUse.Input...)
		case d.ReasoningContent != nil && d.ReasoningContent.Text != "":
			t.so.write(geminiReply("", t.model, []gemini.Part{{Text: d.ReasoningContent.Text, Thought: true}}, "", nil))
		}
	case bedrock.EventContentBlockStop:
		if t.tool != nil {
			t.tool.Args = jsonObject(append(json.RawMessage{}, t.input...))
			t.so.write(geminiReply("", t.model, []gemini.Part{{FunctionCall: t.tool}}, "", nil))
			t.tool = nil
		}
	case bedrock.EventMessageStop:
		t.stop = ev.StopReason
	case bedrock.EventMetadata:
		t.end()
	}
}

// end writes the last event with the finish reason and the usage.
func (t *generateBedrock) end() {
	u, _ := t.ev.result()
	t.so.write(geminiReply("", t.model, nil, bedrockFinishToGemini(t.stop), &u))
	t.so.close()
}

// streamError passes a stream exception as a Google error event.
func (t *generateBedrock) streamError(status int, msg string) {
	e := &APIError{Status: status, Message: msg}
	e.sanitizeUpstream("")
	t.so.fail(e)
}

// StreamUsage is the metadata event's usage, or an estimate.
func (t *generateBedrock) StreamUsage() (kernel.Usage, bool) { return t.ev.result() }

// Error converts a Bedrock error into Google's shape.
func (t *generateBedrock) Error(status int, body []byte) []byte {
	return GeminiErrorBody(upstreamBedrockError(status, body, ""))
}

func (t *generateBedrock) StreamContentType() string {
	if ct := t.so.StreamContentType(); ct != "" {
		return ct
	}
	return sseContentType
}
