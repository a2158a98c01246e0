package translate

import (
	"bytes"
	"errors"
)

// One rule for the model member of replies, on every route: a reply names the
// model the client asked for (the model group or alias in the request), not
// the provider's model id. Translated replies are built with that name; native
// replies (OpenAI chat, completions, embeddings and Responses, Anthropic
// Messages) are passed with their "model" value spliced in place, the rest of
// the bytes untouched: the top-level "model" of a JSON reply, and of an SSE
// event the top-level "model" (chat and completions chunks) or the one inside
// the event's "response" (Responses events) or "message" (Anthropic's
// message_start).

// replyModel rewrites the model of one request's native reply.
type replyModel struct {
	// name is the client's model name as a JSON string; nil rewrites nothing.
	name []byte
	// nest is the member of a stream event that holds the object with the
	// model ("response", "message"); "" when it is the event's own member.
	nest string
	// same: an event already named the client's model, so the upstream uses
	// that name and no later event needs a look (the model of a stream does
	// not change).
	same bool
	// once: only the first event naming a model carries it (Anthropic's
	// message_start); after it, no event is looked at.
	once, seen bool
	// inPlace: a JSON reply or a stream's chunk is the data plane's own
	// buffer, lent to the translator (Inbound.ReplyInPlace): a name no longer
	// than the provider's is written over it, padded with spaces after the
	// closing quote (JSON whitespace), so the reply keeps its length and is
	// not copied (a stream's event: sseEditor.inPlace).
	inPlace bool
}

// newReplyModel returns the rewrite to the client's model name, made in
// place in JSON replies when inPlace.
func newReplyModel(client, nest string, once, inPlace bool) replyModel {
	if client == "" {
		return replyModel{}
	}
	return replyModel{name: appendJSONString(nil, client), nest: nest, once: once, inPlace: inPlace}
}

// active reports whether events may still need a rewrite.
func (r *replyModel) active() bool { return r.name != nil && !r.same && (!r.once || !r.seen) }

// modelStream passes a native stream with the client's model in its events;
// observe sees every event (usage).
type modelStream struct {
	ed      sseEditor
	model   replyModel
	observe func(ev SSEEvent)
}

// feed passes one chunk: see sseEditor.feed.
func (m *modelStream) feed(chunk []byte, eos bool) ([]byte, error) {
	if m.ed.fn == nil {
		m.ed.fn, m.ed.active, m.ed.inPlace = m.event, m.model.active(), m.model.inPlace
	}
	out, err := m.ed.feed(chunk, eos)
	if !m.model.active() {
		m.ed.stop()
	}
	return out, err
}

func (m *modelStream) event(ev SSEEvent) eventAction {
	if m.observe != nil {
		m.observe(ev)
	}
	at, with := m.model.event(ev.Data)
	return eventAction{at: at, with: with}
}

// errStopScan ends a scan once the member looked for is found.
var errStopScan = errors.New("stop")

// body returns the JSON reply b with its top-level model renamed, given the
// span of its model member (absent: unchanged); b itself when nothing changes,
// and when the name was written over b in place (see inPlace).
func (r *replyModel) body(b []byte, model Span) []byte {
	if r.name == nil || !model.OK() || bytes.Equal(model.bytes(b), r.name) {
		return b
	}
	if r.inPlace && len(r.name) <= model.End-model.Start {
		pad := b[model.Start+copy(b[model.Start:model.End], r.name) : model.End]
		for i := range pad {
			pad[i] = ' '
		}
		return b
	}
	return applyEdits(b, []edit{{model.Start, model.End, r.name}})
}

// event returns the edit of one stream event's data: the span of its model
// value and the name to put there (nil when the event keeps its bytes).
func (r *replyModel) event(data []byte) (Span, []byte) {
	if !r.active() || len(data) == 0 || data[0] != '{' {
		return absent, nil
	}
	v := findModel(data, r.nest)
	if !v.OK() {
		return absent, nil
	}
	r.seen = true
	if bytes.Equal(v.bytes(data), r.name) {
		r.same = true
		return absent, nil
	}
	return v, r.name
}

// findModel is the span of the string model of the event data: its own
// member, or the one of the object in its nest member. It stops at the
// member.
func findModel(data []byte, nest string) Span {
	found := absent
	_, _ = ScanObject(data, 0, false, func(key []byte, v Span) error {
		switch {
		case KeyIs(key, "model"):
			if data[v.Start] == '"' {
				found = v
				return errStopScan
			}
		case nest != "" && KeyIs(key, nest) && v.isObject(data):
			_, _ = ScanObject(data, v.Start, false, func(key []byte, m Span) error {
				if KeyIs(key, "model") && data[m.Start] == '"' {
					found = m
					return errStopScan
				}
				return nil
			})
			if found.OK() {
				return errStopScan
			}
		}
		return nil
	})
	return found
}

// usageAndModel returns the spans of the top-level usage and model members of
// a JSON reply, in one scan.
func usageAndModel(b []byte) (usage, model Span, err error) {
	usage, model = absent, absent
	_, err = ScanObject(b, 0, true, func(key []byte, v Span) error {
		switch {
		case KeyIs(key, "usage"):
			usage = v
		case KeyIs(key, "model"):
			model = v
		}
		return nil
	})
	return usage, model, err
}
