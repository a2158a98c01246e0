package translate

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/openai"
)

// completionsDefaultMaxTokens is OpenAI's documented default max_tokens of a
// legacy completion; a chat upstream would otherwise write up to its own
// (much larger) limit.
const completionsDefaultMaxTokens = 16

// completionsViaChat serves OpenAI's legacy completions API (POST
// /v1/completions) from a provider the gateway reaches through its chat
// translator (gemini, bedrock, vertex): the prompt becomes one user message
// of a chat completions request, which the inner chat translator sends on
// as a client's chat request; its chat completion (or chunk stream) becomes
// a text_completion object (or text_completion events). Usage and
// accounting are the inner translator's.
//
// What chat cannot express is refused with a 400 naming the member: more
// than one prompt or token-array prompts, suffix, echo, logprobs, best_of
// or n above 1. temperature, top_p, stop, seed, the penalties, user and
// stream_options map to their chat members.
type completionsViaChat struct {
	inner Translator
	model string // the client's model name

	// Stream state.
	sse SSEParser
	out []byte
}

var _ Translator = (*completionsViaChat)(nil)

func newCompletionsViaChat(inner Translator) *completionsViaChat {
	return &completionsViaChat{inner: inner}
}

// completionsChatRequest is the chat request a completion becomes.
type completionsChatRequest struct {
	openai.UpstreamChatRequest
	MaxTokens        int64    `json:"max_tokens,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
}

// Request builds the chat completions request and hands it to the inner
// translator.
func (t *completionsViaChat) Request(in *Inbound, target *Target) (*Outbound, error) {
	var req openai.CompletionRequest
	if err := json.Unmarshal(in.Body, &req); err != nil {
		return nil, errors.New("invalid completions request: " + err.Error())
	}
	prompt, err := completionPrompt(req.Prompt)
	if err != nil {
		return nil, err
	}
	switch {
	case req.Suffix != nil && *req.Suffix != "":
		return nil, &fieldError{"suffix", "is not supported by this model (it is served through chat completions)"}
	case req.Echo:
		return nil, &fieldError{"echo", "is not supported by this model (it is served through chat completions)"}
	case req.Logprobs != nil:
		return nil, &fieldError{"logprobs", "is not supported by this model (it is served through chat completions)"}
	case req.BestOf != nil && *req.BestOf > 1:
		return nil, &fieldError{"best_of", "must be 1 for this model (it is served through chat completions)"}
	case req.N != nil && *req.N > 1:
		return nil, &fieldError{"n", "must be 1 for this model (it is served through chat completions)"}
	}
	t.model = in.Model
	maxTokens := in.MaxTokens
	if maxTokens == 0 {
		maxTokens = completionsDefaultMaxTokens
	}
	chat := completionsChatRequest{
		UpstreamChatRequest: openai.UpstreamChatRequest{
			Model:       in.Model,
			Messages:    []openai.UpstreamChatMessage{{Role: "user", Content: prompt}},
			Temperature: req.Temperature,
			TopP:        req.TopP,
			Stream:      in.Stream,
			User:        in.User,
		},
		MaxTokens: maxTokens, Seed: req.Seed,
		PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty,
	}
	if chat.Stop, err = stopSequences(req.Stop); err != nil {
		return nil, err
	}
	if in.Stream && req.StreamOptions != nil {
		chat.StreamOptions = &openai.StreamOptions{IncludeUsage: req.StreamOptions.IncludeUsage}
	}
	body, err := json.Marshal(chat)
	if err != nil {
		return nil, err
	}
	chatIn, err := asChatInbound(in, body)
	if err != nil {
		return nil, err
	}
	if chatIn.ClampMaxTokens > maxTokens {
		chatIn.ClampMaxTokens = maxTokens
	}
	return t.inner.Request(chatIn, target)
}

// completionPrompt reads prompt: a string, or an array of one string.
func completionPrompt(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", &fieldError{"prompt", "is required"}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		if len(list) == 1 {
			return list[0], nil
		}
		return "", &fieldError{"prompt", "must be one prompt for this model (it is served through chat completions)"}
	}
	return "", &fieldError{"prompt", "must be a string for this model (token arrays are not supported)"}
}

// completionID is the completion's id from the chat completion's.
func completionID(chatID string) string {
	return "cmpl-" + strings.TrimPrefix(chatID, "chatcmpl-")
}

// Response converts the inner translator's chat completion into a
// text_completion.
func (t *completionsViaChat) Response(body []byte) ([]byte, kernel.Usage, error) {
	chat, u, uerr := t.inner.Response(body)
	if chat == nil {
		return nil, u, uerr
	}
	var c struct {
		openai.UpstreamChatCompletion
		Created int64                     `json:"created"`
		Usage   *openai.UpstreamChatUsage `json:"usage"`
	}
	if err := json.Unmarshal(chat, &c); err != nil {
		return nil, kernel.Usage{}, err
	}
	r := openai.TextCompletion{
		ID: completionID(c.ID), Object: "text_completion", Created: c.Created, Model: t.model,
		Choices: []openai.TextCompletionChoice{},
	}
	for i, ch := range c.Choices {
		choice := openai.TextCompletionChoice{Index: i, FinishReason: strp(completionFinish(ch.FinishReason))}
		if ch.Message.Content != nil {
			choice.Text = *ch.Message.Content
		}
		r.Choices = append(r.Choices, choice)
	}
	r.Usage = completionUsageOf(c.Usage)
	if r.Usage == nil {
		r.Usage = &openai.CompletionUsage{}
	}
	out, err := json.Marshal(r)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return out, u, uerr
}

// completionFinish maps chat's finish reason: a completion has no tool calls.
func completionFinish(f string) string {
	if f == "tool_calls" || f == "function_call" {
		return "stop"
	}
	return f
}

func completionUsageOf(c *openai.UpstreamChatUsage) *openai.CompletionUsage {
	if c == nil {
		return nil
	}
	return &openai.CompletionUsage{
		PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
		TotalTokens: c.PromptTokens + c.CompletionTokens,
	}
}

// StreamChunk converts the inner translator's chat.completion.chunk events
// into text_completion events: each text delta one event, the finish reason
// its own event, the usage event (when the client asked for it) with empty
// choices, then data: [DONE]. An error event passes as it is.
func (t *completionsViaChat) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	chat, err := t.inner.StreamChunk(chunk, eos)
	t.out = t.out[:0]
	if ferr := t.sse.Feed(chat, t.event); ferr != nil && err == nil {
		err = ferr
	}
	if eos {
		if ferr := t.sse.Flush(t.event); ferr != nil && err == nil {
			err = ferr
		}
	}
	return append([]byte{}, t.out...), err
}

func (t *completionsViaChat) event(ev SSEEvent) {
	if string(ev.Data) == "[DONE]" {
		t.out = append(t.out, "data: [DONE]\n\n"...)
		return
	}
	var c struct {
		openai.UpstreamChatChunk
		Created int64                     `json:"created"`
		Usage   *openai.UpstreamChatUsage `json:"usage"`
	}
	if json.Unmarshal(ev.Data, &c) != nil || len(c.Error) > 0 && string(c.Error) != "null" {
		t.write(ev.Data) // an error event (or what is not a chunk) goes to the client as it is
		return
	}
	base := openai.TextCompletion{ID: completionID(c.ID), Object: "text_completion", Created: c.Created, Model: t.model}
	for i, ch := range c.Choices {
		text := ""
		if ch.Delta.Content != nil {
			text = *ch.Delta.Content
		}
		var finish *string
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			finish = strp(completionFinish(*ch.FinishReason))
		}
		if text == "" && finish == nil {
			continue // role-only and tool-call deltas carry no text
		}
		e := base
		e.Choices = []openai.TextCompletionChoice{{Text: text, Index: i, FinishReason: finish}}
		t.writeJSON(&e)
	}
	if c.Usage != nil && len(c.Choices) == 0 {
		e := base
		e.Choices = []openai.TextCompletionChoice{}
		e.Usage = completionUsageOf(c.Usage)
		t.writeJSON(&e)
	}
}

func (t *completionsViaChat) writeJSON(v *openai.TextCompletion) {
	if b, err := json.Marshal(v); err == nil {
		t.write(b)
	}
}

func (t *completionsViaChat) write(data []byte) {
	t.out = append(t.out, "data: "...)
	t.out = append(t.out, data...)
	t.out = append(t.out, "\n\n"...)
}

// StreamUsage is the inner translator's.
func (t *completionsViaChat) StreamUsage() (kernel.Usage, bool) { return t.inner.StreamUsage() }

// Error is the inner translator's: OpenAI's error shape.
func (t *completionsViaChat) Error(status int, body []byte) []byte {
	return t.inner.Error(status, body)
}

// streamContentType: the client's stream is SSE whatever the upstream's
// (Bedrock's is an AWS event stream).
func (t *completionsViaChat) StreamContentType() string { return sseContentType }

// asChatInbound is the chat request body built for an API served through the
// chat translators, as an Inbound carrying in's request id, Anthropic
// version and clamp.
func asChatInbound(in *Inbound, body []byte) (*Inbound, error) {
	chatIn, err := ParseRequest(APIChat, body)
	if err != nil {
		return nil, err
	}
	chatIn.RequestID, chatIn.AnthropicVersion = in.RequestID, in.AnthropicVersion
	chatIn.ClampMaxTokens = in.ClampMaxTokens
	return chatIn, nil
}
