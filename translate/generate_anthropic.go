package translate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-ai/tollgate/schema/anthropic"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// generateAnthropic serves the Gemini API from an Anthropic deployment:
// systemInstruction → system, contents → messages (functionCall parts →
// tool_use blocks, functionResponse parts → tool_result blocks, inlineData
// → image blocks), functionDeclarations → tools, toolConfig → tool_choice,
// generationConfig → max_tokens (required: the clamp, the client's, the
// deployment's default or 4096), temperature, top_p, stop_sequences. The
// message and its events become GenerateContentResponses (thinking as
// thought parts), the usage reported as usageMetadata.
type generateAnthropic struct {
	apiKey string
	model  string

	sse   SSEParser
	usage anthropicStreamUsage
	so    geminiStreamOut
	id    string
	stop  string
	// tool is the tool_use block being streamed (its input gathered).
	tool  *gemini.FunctionCall
	input []byte
}

var _ Translator = (*generateAnthropic)(nil)

// Request builds the Messages request.
func (t *generateAnthropic) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.model = target.APIKey, in.Model
	t.so.cs.sse = GeminiSSE(in.Path)
	var req gemini.GenerateContentRequest
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid generateContent request: %w", err)
	}
	out := anthropic.UpstreamRequest{Model: target.ProviderModel, MaxTokens: anthropicMaxTokens(in, target), Messages: []anthropic.UpstreamMessage{}, Stream: in.Stream}
	if out.Model == "" {
		out.Model = in.Model
	}
	if sys := geminiText(req.SystemInstruction); sys != "" {
		out.System = []anthropic.UpstreamBlock{{Type: "text", Text: sys}}
	}
	var ids geminiCallIDs
	for i := range req.Contents {
		c := &req.Contents[i]
		blocks, err := anthropicBlocksOfGemini(c, &ids)
		if err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
		role := "user"
		if c.Role == gemini.RoleModel {
			role = "assistant"
		}
		appendTurn(&out, role, blocks)
	}
	for _, tool := range req.Tools {
		for i := range tool.FunctionDeclarations {
			d := &tool.FunctionDeclarations[i]
			out.Tools = append(out.Tools, anthropic.Tool{Name: d.Name, Description: d.Description, InputSchema: geminiToolSchema(d)})
		}
	}
	if tc := req.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil && len(out.Tools) > 0 {
		fc := tc.FunctionCallingConfig
		var choice any
		switch fc.Mode {
		case gemini.ModeAny:
			choice = map[string]string{"type": "any"}
			if len(fc.AllowedFunctionNames) == 1 {
				choice = map[string]string{"type": "tool", "name": fc.AllowedFunctionNames[0]}
			}
		case gemini.ModeNone:
			choice = map[string]string{"type": "none"}
		case gemini.ModeAuto:
			choice = map[string]string{"type": "auto"}
		}
		if choice != nil {
			out.ToolChoice, _ = json.Marshal(choice)
		}
	}
	if cfg := req.GenerationConfig; cfg != nil {
		if cfg.CandidateCount != nil && *cfg.CandidateCount > 1 {
			return nil, errors.New("generationConfig.candidateCount: only one candidate is supported by this model")
		}
		out.Temperature, out.TopP, out.StopSequences = cfg.Temperature, cfg.TopP, cfg.StopSequences
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &Outbound{Path: joinPath(target.BasePath, "/messages"), Headers: anthropicHeaders(target, ""), Body: body}, nil
}

// anthropicBlocksOfGemini converts one content's parts into blocks; thoughts
// are dropped.
func anthropicBlocksOfGemini(c *gemini.Content, ids *geminiCallIDs) ([]anthropic.UpstreamBlock, error) {
	var blocks []anthropic.UpstreamBlock
	for i := range c.Parts {
		p := &c.Parts[i]
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			blocks = append(blocks, anthropic.UpstreamBlock{Type: "tool_use", ID: ids.call(p.FunctionCall), Name: p.FunctionCall.Name, Input: jsonObject(p.FunctionCall.Args)})
		case p.FunctionResponse != nil:
			content, _ := json.Marshal(toolArguments(p.FunctionResponse.Response))
			blocks = append(blocks, anthropic.UpstreamBlock{Type: "tool_result", ToolUseID: ids.response(p.FunctionResponse), Content: content})
		case p.InlineData != nil:
			blocks = append(blocks, anthropic.UpstreamBlock{Type: "image", Source: &anthropic.ImageSource{Type: "base64", MediaType: p.InlineData.MimeType, Data: p.InlineData.Data}})
		case p.FileData != nil:
			blocks = append(blocks, anthropic.UpstreamBlock{Type: "image", Source: &anthropic.ImageSource{Type: "url", URL: p.FileData.FileURI}})
		case p.Text != "":
			blocks = append(blocks, anthropic.UpstreamBlock{Type: "text", Text: p.Text})
		}
	}
	return blocks, nil
}

// Response converts a message into a GenerateContentResponse.
func (t *generateAnthropic) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r anthropic.UpstreamResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	var parts []gemini.Part
	for _, b := range r.Content {
		switch b.Type {
		case "text":
			parts = append(parts, gemini.Part{Text: b.Text})
		case "thinking":
			parts = append(parts, gemini.Part{Text: b.Thinking, Thought: true})
		case "tool_use":
			parts = append(parts, gemini.Part{FunctionCall: &gemini.FunctionCall{ID: b.ID, Name: b.Name, Args: jsonObject(b.Input)}})
		}
	}
	u := anthropicUsage(r.Usage).kernel()
	out, err := json.Marshal(geminiReply(r.ID, t.model, parts, anthropicStopToGemini(r.StopReason), &u))
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return out, u, nil
}

// StreamChunk converts Messages events into GenerateContentResponse events:
// one per text or thinking delta, one per tool_use block once its input is
// complete, and a last one at message_stop with the finish reason and usage.
func (t *generateAnthropic) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.so.out = t.so.out[:0]
	err := t.sse.FeedAll(chunk, eos, t.event)
	if eos && !t.so.ended {
		t.end()
	}
	return append([]byte{}, t.so.out...), err
}

func (t *generateAnthropic) event(ev SSEEvent) {
	if t.so.ended {
		return
	}
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
			t.id = e.Message.ID
		}
	case "content_block_start":
		if e.Block != nil && e.Block.Type == "tool_use" {
			t.tool, t.input = &gemini.FunctionCall{ID: e.Block.ID, Name: e.Block.Name}, t.input[:0]
		}
	case "content_block_delta":
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				t.so.write(geminiReply(t.id, t.model, []gemini.Part{{Text: d.Text}}, "", nil))
			}
		case "thinking_delta":
			if d.Thinking != "" {
				t.so.write(geminiReply(t.id, t.model, []gemini.Part{{Text: d.Thinking, Thought: true}}, "", nil))
			}
		case "input_json_delta":
			if t.tool != nil {
				t.input = append(t.input, d.PartialJSON...)
			}
		}
	case "content_block_stop":
		if t.tool != nil {
			t.tool.Args = jsonObject(append(json.RawMessage{}, t.input...))
			t.so.write(geminiReply(t.id, t.model, []gemini.Part{{FunctionCall: t.tool}}, "", nil))
			t.tool = nil
		}
	case "message_delta":
		if d.StopReason != "" {
			t.stop = d.StopReason
		}
	case "message_stop":
		t.end()
	case "error":
		var ed anthropicErrorDetail
		_ = json.Unmarshal(e.Error, &ed)
		t.so.fail(&APIError{Status: 500, Message: redactSecrets(ed.Message, t.apiKey)})
	}
}

// end writes the last event with the finish reason and the usage.
func (t *generateAnthropic) end() {
	u, _ := t.usage.result()
	t.so.write(geminiReply(t.id, t.model, nil, anthropicStopToGemini(t.stop), &u))
	t.so.close()
}

// StreamUsage is the usage of message_start and the last message_delta.
func (t *generateAnthropic) StreamUsage() (kernel.Usage, bool) { return t.usage.result() }

// Error converts an Anthropic error into Google's shape.
func (t *generateAnthropic) Error(status int, body []byte) []byte {
	return GeminiErrorBody(upstreamAnthropicError(status, body, t.apiKey))
}

func (t *generateAnthropic) StreamContentType() string { return t.so.StreamContentType() }
