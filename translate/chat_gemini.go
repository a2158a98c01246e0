package translate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/schema/openai"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// chatGemini serves OpenAI's chat completions API from a Gemini deployment:
// messages become contents (system and developer → systemInstruction,
// assistant → role "model", tool calls → functionCall parts, tool messages →
// functionResponse parts named after the call they answer, images →
// inlineData or fileData), tools → functionDeclarations with their JSON
// Schema as parametersJsonSchema, tool_choice → toolConfig, and the options
// → generationConfig (max tokens, temperature, top_p, stop, seed, penalties,
// response_format → responseMimeType/responseJsonSchema, reasoning_effort →
// thinkingConfig). The reply and the SSE stream become chat completions again;
// thoughts become reasoning_content.
type chatGemini struct {
	apiKey       string
	includeUsage bool
	created      int64
	model        string // provider model, until the reply names its version

	ev  geminiEvents
	cc  chatChunks
	out []byte
	// stream state
	started  bool
	finished bool // the finish chunk was written
	calls    int  // function calls streamed (tool call indexes)
	done     bool // data: [DONE] written
}

var _ Translator = (*chatGemini)(nil)

// geminiChatRequest is the part of a chat completions request the Gemini
// translator reads beyond the fields every translator shares.
type geminiChatRequest struct {
	openai.ChatRequest // shared OpenAI chat request type
	// ResponseFormat: {"type":"text"|"json_object"|"json_schema","json_schema":{"schema":…}}.
	ResponseFormat *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	ReasoningEffort  string   `json:"reasoning_effort"`
	Seed             *int64   `json:"seed"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
}

// reasoningBudgets maps reasoning_effort to a thinking budget in tokens.
var reasoningBudgets = map[string]int64{"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576}

// geminiMaxTokens is maxOutputTokens: the kernel's clamp, else the client's,
// else absent (the model's own limit).
func geminiMaxTokens(in *Inbound) *int64 {
	switch {
	case in.ClampMaxTokens > 0:
		return &in.ClampMaxTokens
	case in.MaxTokens > 0:
		return &in.MaxTokens
	}
	return nil
}

// Request builds the generateContent (or streamGenerateContent) request.
func (t *chatGemini) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.includeUsage, t.created = target.APIKey, in.IncludeUsage, anthropicNow().Unix()
	t.model = in.Model // replies name the client's model (reply_model.go), not Gemini's modelVersion
	t.ev.onEvent, t.ev.onError = t.event, t.streamError
	var req geminiChatRequest
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid chat completions request: %w", err)
	}
	if req.N != nil && *req.N > 1 {
		return nil, errors.New("n: only one choice is supported by this model")
	}
	out, err := chatToGemini(&req)
	if err != nil {
		return nil, err
	}
	cfg := out.GenerationConfig
	cfg.MaxOutputTokens = geminiMaxTokens(in)
	cfg.Temperature, cfg.TopP, cfg.Seed = req.Temperature, req.TopP, req.Seed
	cfg.PresencePenalty, cfg.FrequencyPenalty = req.PresencePenalty, req.FrequencyPenalty
	if cfg.StopSequences, err = stopSequences(req.Stop); err != nil {
		return nil, err
	}
	if f := req.ResponseFormat; f != nil {
		switch f.Type {
		case "json_object":
			cfg.ResponseMimeType = "application/json"
		case "json_schema":
			cfg.ResponseMimeType = "application/json"
			if f.JSONSchema != nil {
				cfg.ResponseJSONSchema = f.JSONSchema.Schema
			}
		}
	}
	if req.ReasoningEffort != "" {
		b, ok := reasoningBudgets[req.ReasoningEffort]
		if !ok {
			return nil, fmt.Errorf("reasoning_effort %q is not supported by this model", req.ReasoningEffort)
		}
		cfg.ThinkingConfig = &gemini.ThinkingConfig{ThinkingBudget: &b, IncludeThoughts: b != 0}
	}
	if emptyGenerationConfig(cfg) {
		out.GenerationConfig = nil
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	method := GeminiGenerate
	if in.Stream {
		method = GeminiStream
	}
	return &Outbound{Path: geminiPath(target, in, method), Headers: geminiHeaders(target), Body: body}, nil
}

// emptyGenerationConfig reports whether c sets nothing (it is then left out).
func emptyGenerationConfig(c *gemini.GenerationConfig) bool {
	b, err := json.Marshal(c)
	return err == nil && string(b) == "{}"
}

// chatToGemini converts the messages, tools and tool choice; the returned
// request has an empty GenerationConfig for the caller to fill.
func chatToGemini(req *geminiChatRequest) (*gemini.GenerateContentRequest, error) {
	out := &gemini.GenerateContentRequest{Contents: []gemini.Content{}, GenerationConfig: &gemini.GenerationConfig{}}
	names := map[string]string{} // tool call id → function name
	for i, m := range req.Messages {
		if err := appendChatToGemini(out, m, names); err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
	}
	var decls []gemini.FunctionDeclaration
	for _, tool := range req.Tools {
		if tool.Type != "" && tool.Type != "function" {
			return nil, fmt.Errorf("tools: type %q is not supported by this model", tool.Type)
		}
		d := gemini.FunctionDeclaration{Name: tool.Function.Name, Description: tool.Function.Description}
		if p := tool.Function.Parameters; len(p) > 0 && string(p) != "null" {
			d.ParametersJSONSchema = p
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		out.Tools = []gemini.Tool{{FunctionDeclarations: decls}}
	}
	fc, err := geminiToolChoice(req.ToolChoice)
	if err != nil {
		return nil, err
	}
	if fc != nil && len(decls) > 0 {
		out.ToolConfig = &gemini.ToolConfig{FunctionCallingConfig: fc}
	}
	return out, nil
}

// geminiToolChoice maps OpenAI's tool_choice: none → NONE, auto → AUTO,
// required → ANY, a function → ANY limited to it.
func geminiToolChoice(raw json.RawMessage) (*gemini.FunctionCallingConfig, error) {
	switch s := strings.TrimSpace(string(raw)); s {
	case "", "null":
		return nil, nil
	case `"auto"`:
		return &gemini.FunctionCallingConfig{Mode: gemini.ModeAuto}, nil
	case `"required"`:
		return &gemini.FunctionCallingConfig{Mode: gemini.ModeAny}, nil
	case `"none"`:
		return &gemini.FunctionCallingConfig{Mode: gemini.ModeNone}, nil
	}
	var v struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Function.Name == "" {
		return nil, errors.New("tool_choice must be none, auto, required or a function")
	}
	return &gemini.FunctionCallingConfig{Mode: gemini.ModeAny, AllowedFunctionNames: []string{v.Function.Name}}, nil
}

// appendChatToGemini adds one OpenAI message; names collects the function
// name of every tool call so that tool messages can name theirs.
func appendChatToGemini(out *gemini.GenerateContentRequest, m openai.ChatMessage, names map[string]string) error {
	switch m.Role {
	case "system", "developer":
		parts, err := geminiParts(m.Content, false)
		if err != nil {
			return err
		}
		if len(parts) > 0 {
			if out.SystemInstruction == nil {
				out.SystemInstruction = &gemini.Content{}
			}
			out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, parts...)
		}
		return nil
	case "user":
		parts, err := geminiParts(m.Content, true)
		if err != nil {
			return err
		}
		appendGeminiTurn(out, gemini.RoleUser, parts)
		return nil
	case "assistant":
		parts, err := geminiParts(m.Content, false)
		if err != nil {
			return err
		}
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Function.Arguments)
			if strings.TrimSpace(tc.Function.Arguments) == "" {
				args = json.RawMessage(`{}`)
			} else if !json.Valid(args) {
				return fmt.Errorf("tool call %s: arguments are not JSON", tc.ID)
			}
			names[tc.ID] = tc.Function.Name
			parts = append(parts, gemini.Part{FunctionCall: &gemini.FunctionCall{Name: tc.Function.Name, Args: jsonObject(args)}})
		}
		appendGeminiTurn(out, gemini.RoleModel, parts)
		return nil
	case "tool":
		text, err := contentText(m.Content)
		if err != nil {
			return err
		}
		name, ok := names[m.ToolCallID]
		if !ok {
			return fmt.Errorf("tool_call_id %q answers no tool call of an earlier assistant message", m.ToolCallID)
		}
		appendGeminiTurn(out, gemini.RoleUser, []gemini.Part{{FunctionResponse: &gemini.FunctionResponse{
			Name: name, Response: functionResponse(text),
		}}})
		return nil
	default:
		return fmt.Errorf("role %q is not supported", m.Role)
	}
}

// appendGeminiTurn adds parts to the last content when it has the same role
// (consecutive tool results form one turn, as Gemini requires), else a new
// content.
func appendGeminiTurn(out *gemini.GenerateContentRequest, role string, parts []gemini.Part) {
	if len(parts) == 0 {
		return
	}
	if n := len(out.Contents); n > 0 && out.Contents[n-1].Role == role {
		out.Contents[n-1].Parts = append(out.Contents[n-1].Parts, parts...)
		return
	}
	out.Contents = append(out.Contents, gemini.Content{Role: role, Parts: parts})
}

// geminiParts converts an OpenAI content (string, parts or null) into parts;
// images (user messages only) become inlineData (data URLs) or fileData.
func geminiParts(raw json.RawMessage, images bool) ([]gemini.Part, error) {
	blocks, err := contentBlocks(raw, images)
	if err != nil {
		return nil, err
	}
	parts := make([]gemini.Part, 0, len(blocks))
	for _, b := range blocks {
		switch {
		case b.Type == "text":
			parts = append(parts, gemini.Part{Text: b.Text})
		case b.Source != nil && b.Source.Type == "base64":
			parts = append(parts, gemini.Part{InlineData: &gemini.Blob{MimeType: b.Source.MediaType, Data: b.Source.Data}})
		case b.Source != nil:
			parts = append(parts, gemini.Part{FileData: &gemini.FileData{FileURI: b.Source.URL}})
		}
	}
	return parts, nil
}

// --- response -----------------------------------------------------------------

// geminiOpenAIUsage is OpenAI's usage object as the Gemini translators write
// it: thoughts are completion tokens reported as reasoning tokens, cached
// content as cached prompt tokens.
type geminiOpenAIUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func openAIUsageOfKernel(u kernel.Usage) geminiOpenAIUsage {
	var o geminiOpenAIUsage
	o.PromptTokens = u.Input + u.CachedInput + u.CacheWrite
	o.CompletionTokens = u.Output + u.Reasoning
	o.TotalTokens = o.PromptTokens + o.CompletionTokens
	o.PromptTokensDetails.CachedTokens = u.CachedInput
	o.CompletionTokensDetails.ReasoningTokens = u.Reasoning
	return o
}

// geminiCompletion is a chat completion written from a Gemini reply.
type geminiCompletion struct {
	ID      string              `json:"id"`
	Object  string              `json:"object"`
	Created int64               `json:"created"`
	Model   string              `json:"model"`
	Choices []openai.ChatChoice `json:"choices"`
	Usage   geminiOpenAIUsage   `json:"usage"`
}

// Response converts a GenerateContentResponse into a chat completion.
func (t *chatGemini) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r gemini.GenerateContentResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	u := geminiKernelUsage(r.UsageMetadata)
	msg := openai.ChatReplyMessage{Role: "assistant"}
	finish := "content_filter" // no candidate: the prompt was blocked
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		var text strings.Builder
		hasText := false
		if c.Content != nil {
			for _, p := range c.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					tc := openai.ToolCall{ID: geminiCallID(p.FunctionCall, len(msg.ToolCalls)), Type: "function"}
					tc.Function.Name, tc.Function.Arguments = p.FunctionCall.Name, geminiArgs(p.FunctionCall.Args)
					msg.ToolCalls = append(msg.ToolCalls, tc)
				case p.Thought:
					msg.ReasoningContent += p.Text
				case p.Text != "":
					text.WriteString(p.Text)
					hasText = true
				}
			}
		}
		if hasText {
			s := text.String()
			msg.Content = &s
		}
		finish = geminiFinishToOpenAI(c.FinishReason, len(msg.ToolCalls) > 0)
	}
	out, err := json.Marshal(geminiCompletion{
		ID: t.responseID(r.ResponseID), Object: "chat.completion", Created: t.created, Model: t.model,
		Choices: []openai.ChatChoice{{Message: msg, FinishReason: finish}},
		Usage:   openAIUsageOfKernel(u),
	})
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	if r.UsageMetadata == nil {
		return out, kernel.Usage{}, errNoUsage
	}
	return out, u, nil
}

func (t *chatGemini) responseID(id string) string {
	if id == "" {
		return "chatcmpl-gemini"
	}
	return "chatcmpl-" + id
}

// --- stream -------------------------------------------------------------------

// StreamChunk converts Gemini SSE events into chat.completion.chunk events:
// the role chunk first, then content, reasoning_content and tool call chunks
// (each function call whole, as Gemini streams them), the finish chunk, and at
// the end of the stream the usage chunk (when asked for) and data: [DONE].
func (t *chatGemini) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.out = t.out[:0]
	err := t.ev.feed(chunk, eos)
	if eos && !t.done {
		t.done = true
		if t.started && !t.finished {
			t.out = t.cc.chunk(t.out, `{}`, "stop")
		}
		if t.includeUsage && t.started {
			u, _ := t.ev.usage.result()
			usage, _ := json.Marshal(openAIUsageOfKernel(u))
			t.out = t.cc.usage(t.out, usage)
		}
		t.out = append(t.out, "data: [DONE]\n\n"...)
	}
	return append([]byte{}, t.out...), err
}

func (t *chatGemini) event(r *gemini.GenerateContentResponse) {
	if !t.started {
		t.started = true
		t.cc.begin(t.responseID(r.ResponseID), t.model, t.created)
		t.out = t.cc.chunk(t.out, `{"role":"assistant","content":""}`, "")
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" && !t.finished {
			t.finished = true
			t.out = t.cc.chunk(t.out, `{}`, "content_filter")
		}
		return
	}
	c := r.Candidates[0]
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			switch {
			case p.FunctionCall != nil:
				k := t.calls
				t.calls++
				id, _ := json.Marshal(geminiCallID(p.FunctionCall, k))
				name, _ := json.Marshal(p.FunctionCall.Name)
				args, _ := json.Marshal(geminiArgs(p.FunctionCall.Args))
				t.out = t.cc.chunk(t.out, `{"tool_calls":[{"index":`+strconv.Itoa(k)+`,"id":`+string(id)+
					`,"type":"function","function":{"name":`+string(name)+`,"arguments":`+string(args)+`}}]}`, "")
			case p.Text == "":
			case p.Thought:
				s, _ := json.Marshal(p.Text)
				t.out = t.cc.chunk(t.out, `{"reasoning_content":`+string(s)+`}`, "")
			default:
				s, _ := json.Marshal(p.Text)
				t.out = t.cc.chunk(t.out, `{"content":`+string(s)+`}`, "")
			}
		}
	}
	if c.FinishReason != "" && !t.finished {
		t.finished = true
		t.out = t.cc.chunk(t.out, `{}`, geminiFinishToOpenAI(c.FinishReason, t.calls > 0))
	}
}

// streamError passes an error event of the stream as OpenAI's error event.
func (t *chatGemini) streamError(data []byte) {
	e := upstreamGeminiError(500, data, t.apiKey)
	t.out = append(t.out, "data: "...)
	t.out = append(t.out, e.OpenAIBody()...)
	t.out = append(t.out, "\n\n"...)
}

// StreamUsage is the usage of the last usageMetadata, or an estimate.
func (t *chatGemini) StreamUsage() (kernel.Usage, bool) { return t.ev.usage.result() }

// Error converts a Google error into OpenAI's error shape.
func (t *chatGemini) Error(status int, body []byte) []byte {
	return upstreamGeminiError(status, body, t.apiKey).OpenAIBody()
}

// chatChunks writes chat.completion.chunk events for translators from other
// providers' streams.
type chatChunks struct {
	head []byte // {"id":…,"object":"chat.completion.chunk","created":…,"model":…,
}

// begin fixes the id, model and created time of every chunk.
func (c *chatChunks) begin(id, model string, created int64) {
	h := appendJSONString([]byte(`{"id":`), id)
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	h = appendJSONString(h, model)
	c.head = append(h, ',')
}

// chunk appends one event with the delta (JSON) and finish reason ("" none).
func (c *chatChunks) chunk(out []byte, delta, finish string) []byte {
	out = append(out, "data: "...)
	out = append(out, c.head...)
	out = append(out, `"choices":[{"index":0,"delta":`...)
	out = append(out, delta...)
	out = append(out, `,"finish_reason":`...)
	if finish != "" {
		out = appendJSONString(out, finish)
	} else {
		out = append(out, "null"...)
	}
	return append(out, "}]}\n\n"...)
}

// usage appends the usage chunk (no choices).
func (c *chatChunks) usage(out, usage []byte) []byte {
	out = append(out, "data: "...)
	out = append(out, c.head...)
	out = append(out, `"choices":[],"usage":`...)
	out = append(out, usage...)
	return append(out, "}\n\n"...)
}
