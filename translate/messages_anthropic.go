package translate

import (
	"bytes"
	"strconv"

	"github.com/tollgate-ai/tollgate/kernel"
)

// messagesAnthropic serves the Messages API from an Anthropic deployment with
// no translation: the model is renamed, max_tokens set (clamped or defaulted),
// the credentials replaced, and usage read from the response or from the
// stream's message_start and message_delta events. With count=true it serves
// count_tokens, which is free: it settles at zero usage.
type messagesAnthropic struct {
	count  bool
	apiKey string
	usage  anthropicStreamUsage
	// stream names the client's model in the reply (reply_model.go); model
	// renames the JSON reply's.
	stream modelStream
	model  replyModel
}

var _ Translator = (*messagesAnthropic)(nil)

// Request renames the model and sets max_tokens (messages only); the path is
// the base path + /messages (or /messages/count_tokens).
func (t *messagesAnthropic) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey = target.APIKey
	t.model = newReplyModel(in.Model, "message", true, in.ReplyInPlace)
	t.stream = modelStream{model: t.model, observe: func(ev SSEEvent) { t.usage.observe(ev.Data) }}
	path := "/messages"
	if t.count {
		path = "/messages/count_tokens"
	}
	body, err := t.rewrite(in, target)
	if err != nil {
		return nil, err
	}
	return &Outbound{
		Path:    joinPath(target.BasePath, path),
		Headers: anthropicHeaders(target, in.AnthropicVersion),
		Body:    body,
	}, nil
}

// rewrite edits the client's body: model renamed; max_tokens replaced by the
// clamp, or added when absent or null (Anthropic requires it). It returns nil
// when nothing changes.
func (t *messagesAnthropic) rewrite(in *Inbound, target *Target) ([]byte, error) {
	b := in.Body
	f, err := in.bodyFields()
	if err != nil {
		return nil, err
	}
	var e bodyEdits
	if m := target.ProviderModel; m != "" {
		q := appendJSONString(nil, m)
		switch {
		case !f.model.OK():
			e.add("model", q)
		case !bytes.Equal(f.model.bytes(b), q):
			e.replace(f.model, q)
		}
	}
	if !t.count {
		n := strconv.AppendInt(nil, anthropicMaxTokens(in, target), 10)
		switch {
		case !f.maxTokens.OK():
			e.add("max_tokens", n)
		case in.ClampMaxTokens > 0 || f.maxTokens.IsNull(b):
			if !bytes.Equal(f.maxTokens.bytes(b), n) {
				e.replace(f.maxTokens, n)
			}
		}
	}
	return e.apply(b, f), nil
}

// Response reads the usage of a message (count_tokens: zero usage, reported,
// so the request settles at no cost) and names the client's model; the rest
// of the body passes unchanged.
func (t *messagesAnthropic) Response(body []byte) ([]byte, kernel.Usage, error) {
	if t.count {
		return body, kernel.Usage{}, nil
	}
	v, m, err := usageAndModel(body)
	if err != nil {
		return body, kernel.Usage{}, err
	}
	var u anthropicUsage
	ok := u.update(body, v)
	body = t.model.body(body, m)
	if !ok {
		return body, kernel.Usage{}, errNoUsage
	}
	return body, u.kernel(), nil
}

// StreamChunk reads the usage from the events; the bytes pass unchanged but
// for the model of message_start, renamed to the client's.
func (t *messagesAnthropic) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	return t.stream.feed(chunk, eos)
}

// StreamUsage is the usage of message_start and the last message_delta.
func (t *messagesAnthropic) StreamUsage() (kernel.Usage, bool) {
	if t.count {
		return kernel.Usage{}, true
	}
	return t.usage.result()
}

// Error passes Anthropic's error in Anthropic's shape, secrets redacted.
func (t *messagesAnthropic) Error(status int, body []byte) []byte {
	return AnthropicErrorBody(upstreamAnthropicError(status, body, t.apiKey))
}
