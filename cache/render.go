package cache

import (
	"encoding/json"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Content types of rendered replies.
const (
	contentJSON = "application/json"
	contentSSE  = "text/event-stream"
)

// render is the entry's reply as the plan's request wants it: the stored body
// itself for a plain request, else the API's stream rendered from it.
// ErrUnsupported when the body holds something the stream cannot carry.
func render(e *Entry, p *Plan) (body []byte, contentType string, err error) {
	if !p.stream {
		return e.Body, contentJSON, nil
	}
	switch e.API {
	case APIChat:
		body, err = renderChatStream(e, p.incl)
	case APICompletions:
		body, err = renderCompletionsStream(e, p.incl)
	case APIResponses:
		body, err = renderResponsesStream(e)
	case APIMessages:
		body, err = renderMessagesStream(e)
	case APIGeminiGenerate:
		body, err = renderGeminiStream(e, p.jsonArray)
		if err == nil && p.jsonArray {
			return body, contentJSON, nil
		}
	default:
		return nil, "", ErrUnsupported
	}
	if err != nil {
		return nil, "", err
	}
	return body, contentSSE, nil
}

// appendEvent appends one SSE event: "event: name" when named, "data: …",
// and the blank line that ends it (WHATWG HTML §9.2.6).
func appendEvent(dst []byte, name string, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	if name != "" {
		dst = append(append(append(dst, "event: "...), name...), '\n')
	}
	return append(append(append(dst, "data: "...), data...), "\n\n"...), nil
}

// openAIUsage is the usage object of chat and completions replies from the
// settled usage (prompt includes cached input, completion includes
// reasoning), for replies stored without one.
func openAIUsage(u kernel.Usage) json.RawMessage {
	type details struct {
		Cached    *int64 `json:"cached_tokens,omitempty"`
		Reasoning *int64 `json:"reasoning_tokens,omitempty"`
	}
	prompt, completion := u.Input+u.CachedInput+u.CacheWrite, u.Output+u.Reasoning
	b, _ := json.Marshal(struct {
		Prompt     int64   `json:"prompt_tokens"`
		Completion int64   `json:"completion_tokens"`
		Total      int64   `json:"total_tokens"`
		PD         details `json:"prompt_tokens_details"`
		CD         details `json:"completion_tokens_details"`
	}{prompt, completion, prompt + completion, details{Cached: &u.CachedInput}, details{Reasoning: &u.Reasoning}})
	return b
}
