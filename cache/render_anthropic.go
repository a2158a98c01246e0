package cache

import (
	"encoding/json"
)

// anthEvent is one event of an Anthropic Messages stream.
type anthEvent struct {
	Type         string          `json:"type"`
	Message      json.RawMessage `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock json.RawMessage `json:"content_block,omitempty"`
	Delta        any             `json:"delta,omitempty"`
	Usage        json.RawMessage `json:"usage,omitempty"`
}

type anthTextDelta struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthJSONDelta struct {
	Type        string `json:"type"`
	PartialJSON string `json:"partial_json"`
}

type anthThinkingDelta struct {
	Type     string `json:"type"`
	Thinking string `json:"thinking"`
}

type anthSignatureDelta struct {
	Type      string `json:"type"`
	Signature string `json:"signature"`
}

type anthStopDelta struct {
	StopReason   json.RawMessage `json:"stop_reason"`
	StopSequence json.RawMessage `json:"stop_sequence"`
}

// renderMessagesStream renders an Anthropic message as the stream Anthropic
// sends for it: message_start (the message with no content, no stop reason
// and its input usage), per content block content_block_start (the block
// empty), its deltas (text_delta; input_json_delta with the tool input;
// thinking_delta and signature_delta) and content_block_stop, then
// message_delta (stop_reason, stop_sequence and the usage) and message_stop.
// A text block with citations is not rendered (ErrUnsupported).
func renderMessagesStream(e *Entry) ([]byte, error) {
	var m object
	if err := json.Unmarshal(e.Body, &m); err != nil || m.str("type") != "message" {
		return nil, ErrUnsupported
	}
	var blocks []object
	if err := json.Unmarshal(m["content"], &blocks); err != nil {
		return nil, ErrUnsupported
	}
	var usage object
	_ = json.Unmarshal(m["usage"], &usage)
	startUsage := usage.with("output_tokens", "0")
	if usage == nil {
		startUsage = json.RawMessage(`{"input_tokens":0,"output_tokens":0}`)
	}
	var out []byte
	var err error
	emit := func(ev anthEvent) {
		if err == nil {
			out, err = appendEvent(out, ev.Type, ev)
		}
	}
	emit(anthEvent{Type: "message_start", Message: m.with(
		"content", "[]", "stop_reason", "null", "stop_sequence", "null", "usage", string(startUsage))})
	for i, b := range blocks {
		i := i
		switch b.str("type") {
		case "text":
			if c, ok := b["citations"]; ok && !isNull(c) && string(c) != "[]" {
				return nil, ErrUnsupported
			}
			emit(anthEvent{Type: "content_block_start", Index: &i, ContentBlock: b.with("text", `""`)})
			if t := b.str("text"); t != "" {
				emit(anthEvent{Type: "content_block_delta", Index: &i, Delta: anthTextDelta{"text_delta", t}})
			}
		case "tool_use", "server_tool_use":
			emit(anthEvent{Type: "content_block_start", Index: &i, ContentBlock: b.with("input", "{}")})
			if in := b["input"]; !isNull(in) && string(in) != "{}" {
				emit(anthEvent{Type: "content_block_delta", Index: &i, Delta: anthJSONDelta{"input_json_delta", string(in)}})
			}
		case "thinking":
			emit(anthEvent{Type: "content_block_start", Index: &i, ContentBlock: b.with("thinking", `""`, "signature", `""`)})
			if t := b.str("thinking"); t != "" {
				emit(anthEvent{Type: "content_block_delta", Index: &i, Delta: anthThinkingDelta{"thinking_delta", t}})
			}
			if s := b.str("signature"); s != "" {
				emit(anthEvent{Type: "content_block_delta", Index: &i, Delta: anthSignatureDelta{"signature_delta", s}})
			}
		default: // redacted_thinking, a server tool's result: whole in its start
			emit(anthEvent{Type: "content_block_start", Index: &i, ContentBlock: b.with()})
		}
		emit(anthEvent{Type: "content_block_stop", Index: &i})
	}
	stop := anthStopDelta{StopReason: m["stop_reason"], StopSequence: m["stop_sequence"]}
	if isNull(stop.StopReason) {
		stop.StopReason = json.RawMessage("null")
	}
	if isNull(stop.StopSequence) {
		stop.StopSequence = json.RawMessage("null")
	}
	endUsage := m["usage"]
	if isNull(endUsage) {
		endUsage = json.RawMessage(`{"output_tokens":0}`)
	}
	emit(anthEvent{Type: "message_delta", Delta: stop, Usage: endUsage})
	emit(anthEvent{Type: "message_stop"})
	return out, err
}
