package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-ai/tollgate/schema/openai"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// generateOpenAI serves the Gemini API from an OpenAI-compatible (or Azure
// OpenAI) deployment, so @google/genai and gemini-cli can use any model
// group: systemInstruction → a system message, contents → messages (role
// "model" → assistant, functionCall parts → tool_calls, functionResponse
// parts → tool messages, inlineData and fileData → image_url parts),
// functionDeclarations → tools, toolConfig → tool_choice, generationConfig →
// max_completion_tokens, temperature, top_p, stop, seed, penalties,
// response_format. The reply and the stream become GenerateContentResponses
// again, the usage reported as usageMetadata.
type generateOpenAI struct {
	azure  bool
	apiKey string
	model  string // the client's model, reported as modelVersion

	sse    SSEParser
	usage  openAIStreamUsage
	so     geminiStreamOut
	id     string
	finish string
	calls  []openai.ToolCall // streamed tool calls, by index
}

var _ Translator = (*generateOpenAI)(nil)

// geminiChatOut is the chat completions request written from a Gemini
// request.
type geminiChatOut struct {
	Model               string                       `json:"model"`
	Messages            []openai.UpstreamChatMessage `json:"messages"`
	MaxCompletionTokens *int64                       `json:"max_completion_tokens,omitempty"`
	Temperature         *float64                     `json:"temperature,omitempty"`
	TopP                *float64                     `json:"top_p,omitempty"`
	Stop                []string                     `json:"stop,omitempty"`
	Seed                *int64                       `json:"seed,omitempty"`
	PresencePenalty     *float64                     `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64                     `json:"frequency_penalty,omitempty"`
	ResponseFormat      any                          `json:"response_format,omitempty"`
	Stream              bool                         `json:"stream,omitempty"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	Tools      []openai.Tool `json:"tools,omitempty"`
	ToolChoice any           `json:"tool_choice,omitempty"`
}

// Request builds the chat completions request.
func (t *generateOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.model = target.APIKey, in.Model
	t.so.cs.sse = GeminiSSE(in.Path)
	var req gemini.GenerateContentRequest
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, fmt.Errorf("invalid generateContent request: %w", err)
	}
	out := geminiChatOut{Model: target.ProviderModel, Stream: in.Stream, MaxCompletionTokens: geminiMaxTokens(in)}
	if out.Model == "" {
		out.Model = in.Model
	}
	if in.Stream {
		out.StreamOptions = &struct {
			IncludeUsage bool `json:"include_usage"`
		}{true}
	}
	if sys := geminiText(req.SystemInstruction); sys != "" {
		out.Messages = append(out.Messages, openai.UpstreamChatMessage{Role: "system", Content: sys})
	}
	var ids geminiCallIDs
	for i := range req.Contents {
		msgs, err := chatMessagesOfGemini(&req.Contents[i], &ids)
		if err != nil {
			return nil, fmt.Errorf("contents[%d]: %w", i, err)
		}
		out.Messages = append(out.Messages, msgs...)
	}
	for _, tool := range req.Tools {
		for i := range tool.FunctionDeclarations {
			d := &tool.FunctionDeclarations[i]
			var ot openai.Tool
			ot.Type = "function"
			ot.Function.Name, ot.Function.Description, ot.Function.Parameters = d.Name, d.Description, geminiToolSchema(d)
			out.Tools = append(out.Tools, ot)
		}
	}
	if tc := req.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil && len(out.Tools) > 0 {
		fc := tc.FunctionCallingConfig
		switch fc.Mode {
		case gemini.ModeAny:
			out.ToolChoice = "required"
			if len(fc.AllowedFunctionNames) == 1 {
				out.ToolChoice = map[string]any{"type": "function", "function": map[string]string{"name": fc.AllowedFunctionNames[0]}}
			}
		case gemini.ModeNone:
			out.ToolChoice = "none"
		case gemini.ModeAuto:
			out.ToolChoice = "auto"
		}
	}
	if cfg := req.GenerationConfig; cfg != nil {
		if cfg.CandidateCount != nil && *cfg.CandidateCount > 1 {
			return nil, errors.New("generationConfig.candidateCount: only one candidate is supported by this model")
		}
		out.Temperature, out.TopP, out.Stop, out.Seed = cfg.Temperature, cfg.TopP, cfg.StopSequences, cfg.Seed
		out.PresencePenalty, out.FrequencyPenalty = cfg.PresencePenalty, cfg.FrequencyPenalty
		if cfg.ResponseMimeType == "application/json" {
			schema := cfg.ResponseJSONSchema
			if len(schema) == 0 && len(cfg.ResponseSchema) > 0 {
				schema = geminiToolSchema(&gemini.FunctionDeclaration{Parameters: cfg.ResponseSchema})
			}
			if len(schema) > 0 {
				out.ResponseFormat = map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "response", "schema": schema}}
			} else {
				out.ResponseFormat = map[string]string{"type": "json_object"}
			}
		}
	}
	body, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	o := &Outbound{Body: body}
	o.Path, o.Headers = openAIUpstream(target, opChat, t.azure)
	return o, nil
}

// chatMessagesOfGemini converts one content: a user turn's function
// responses become tool messages (first, right after the assistant's
// calls), a model turn's function calls its tool_calls; thoughts are dropped.
func chatMessagesOfGemini(c *gemini.Content, ids *geminiCallIDs) ([]openai.UpstreamChatMessage, error) {
	var out []openai.UpstreamChatMessage
	var parts []openai.UpstreamContentPart
	var calls []openai.ToolCall
	for i := range c.Parts {
		p := &c.Parts[i]
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			tc := openai.ToolCall{ID: ids.call(p.FunctionCall), Type: "function"}
			tc.Function.Name, tc.Function.Arguments = p.FunctionCall.Name, toolArguments(p.FunctionCall.Args)
			calls = append(calls, tc)
		case p.FunctionResponse != nil:
			out = append(out, openai.UpstreamChatMessage{Role: "tool", ToolCallID: ids.response(p.FunctionResponse), Content: toolArguments(p.FunctionResponse.Response)})
		case p.InlineData != nil:
			parts = append(parts, openai.UpstreamContentPart{Type: "image_url", ImageURL: &openai.ImageURL{URL: "data:" + p.InlineData.MimeType + ";base64," + p.InlineData.Data}})
		case p.FileData != nil:
			parts = append(parts, openai.UpstreamContentPart{Type: "image_url", ImageURL: &openai.ImageURL{URL: p.FileData.FileURI}})
		case p.Text != "":
			parts = append(parts, openai.UpstreamContentPart{Type: "text", Text: p.Text})
		}
	}
	switch c.Role {
	case gemini.RoleUser, "":
		if len(parts) > 0 {
			out = append(out, openai.UpstreamChatMessage{Role: "user", Content: flatten(parts)})
		}
	case gemini.RoleModel:
		msg := openai.UpstreamChatMessage{Role: "assistant", ToolCalls: calls}
		if len(parts) > 0 {
			msg.Content = flatten(parts)
		}
		if len(parts) > 0 || len(calls) > 0 {
			out = append(out, msg)
		}
	default:
		return nil, fmt.Errorf("role %q is not supported", c.Role)
	}
	return out, nil
}

// Response converts a chat completion into a GenerateContentResponse.
func (t *generateOpenAI) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r openai.UpstreamChatCompletion
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	v, err := TopLevelMember(body, "usage")
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	ou, ok := parseOpenAIUsage(body, v)
	u := ou.kernel()
	var parts []gemini.Part
	finish := gemini.FinishStop
	if len(r.Choices) > 0 {
		c := r.Choices[0]
		if c.Message.Content != nil && *c.Message.Content != "" {
			parts = append(parts, gemini.Part{Text: *c.Message.Content})
		}
		for _, tc := range c.Message.ToolCalls {
			parts = append(parts, gemini.Part{FunctionCall: &gemini.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: jsonObject(json.RawMessage(tc.Function.Arguments))}})
		}
		finish = openAIFinishToGemini(c.FinishReason)
	}
	out, err := json.Marshal(geminiReply(r.ID, t.model, parts, finish, &u))
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	if !ok {
		return out, kernel.Usage{}, errNoUsage
	}
	return out, u, nil
}

// StreamChunk converts chat.completion.chunk events into
// GenerateContentResponse events: one per content delta, and a last one at
// data: [DONE] (or at the end of the stream) with the tool calls, gathered
// from their deltas, the finish reason and the usage.
func (t *generateOpenAI) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.so.out = t.so.out[:0]
	err := t.sse.FeedAll(chunk, eos, t.event)
	if eos && !t.so.ended {
		t.end()
	}
	return append([]byte{}, t.so.out...), err
}

func (t *generateOpenAI) event(ev SSEEvent) {
	if t.so.ended {
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
		t.so.fail(upstreamOpenAIError(500, ev.Data, t.apiKey))
		return
	}
	if t.id == "" {
		t.id = c.ID
	}
	for _, ch := range c.Choices {
		if d := ch.Delta; d.Content != nil && *d.Content != "" {
			t.so.write(geminiReply(t.id, t.model, []gemini.Part{{Text: *d.Content}}, "", nil))
		}
		for _, tc := range ch.Delta.ToolCalls {
			for len(t.calls) <= tc.Index && tc.Index < 128 {
				t.calls = append(t.calls, openai.ToolCall{})
			}
			if tc.Index >= len(t.calls) {
				continue
			}
			call := &t.calls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Function.Name != "" {
				call.Function.Name = tc.Function.Name
			}
			call.Function.Arguments += tc.Function.Arguments
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			t.finish = *ch.FinishReason
		}
	}
}

// end writes the last event: tool calls, finish reason, usage.
func (t *generateOpenAI) end() {
	var parts []gemini.Part
	for _, tc := range t.calls {
		if tc.Function.Name != "" {
			parts = append(parts, gemini.Part{FunctionCall: &gemini.FunctionCall{ID: tc.ID, Name: tc.Function.Name, Args: jsonObject(json.RawMessage(tc.Function.Arguments))}})
		}
	}
	u, _ := t.usage.result()
	t.so.write(geminiReply(t.id, t.model, parts, openAIFinishToGemini(t.finish), &u))
	t.so.close()
}

// StreamUsage is the usage of the stream's usage chunk, or an estimate.
func (t *generateOpenAI) StreamUsage() (kernel.Usage, bool) { return t.usage.result() }

// Error converts an OpenAI or Azure error into Google's shape.
func (t *generateOpenAI) Error(status int, body []byte) []byte {
	return GeminiErrorBody(upstreamOpenAIError(status, body, t.apiKey))
}

func (t *generateOpenAI) StreamContentType() string { return t.so.StreamContentType() }
