package cache

import (
	"encoding/json"
)

// respEvent is one event of a Responses stream; members not set are left out.
type respEvent struct {
	Type           string          `json:"type"`
	SequenceNumber int64           `json:"sequence_number"`
	Response       json.RawMessage `json:"response,omitempty"`
	OutputIndex    *int            `json:"output_index,omitempty"`
	Item           json.RawMessage `json:"item,omitempty"`
	ItemID         string          `json:"item_id,omitempty"`
	ContentIndex   *int            `json:"content_index,omitempty"`
	SummaryIndex   *int            `json:"summary_index,omitempty"`
	Part           json.RawMessage `json:"part,omitempty"`
	Delta          *string         `json:"delta,omitempty"`
	Text           *string         `json:"text,omitempty"`
	Refusal        *string         `json:"refusal,omitempty"`
	Name           string          `json:"name,omitempty"`
	Arguments      *string         `json:"arguments,omitempty"`
	Logprobs       json.RawMessage `json:"logprobs,omitempty"`
}

// object is a JSON object whose members are kept as written.
type object map[string]json.RawMessage

func (o object) str(k string) string {
	var s string
	_ = json.Unmarshal(o[k], &s)
	return s
}

// with is a copy of o with members set (raw JSON values).
func (o object) with(kv ...string) json.RawMessage {
	c := make(object, len(o)+len(kv)/2)
	for k, v := range o {
		c[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i]] = json.RawMessage(kv[i+1])
	}
	b, _ := json.Marshal(c) // raw members already valid
	return b
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// renderResponsesStream renders a response object as the Responses stream
// OpenAI sends for it: response.created and response.in_progress (the
// response in_progress, no output yet); per output item output_item.added
// (in_progress, empty), its parts — a message's content_part.added,
// output_text.delta (refusal.delta), output_text.done (refusal.done),
// content_part.done; a function call's function_call_arguments.delta and
// .done; a reasoning item's reasoning_summary_part.added,
// reasoning_summary_text.delta and .done, reasoning_summary_part.done — and
// output_item.done with the item whole; then response.completed (or
// response.incomplete) with the response whole. sequence_number counts from 0.
func renderResponsesStream(e *Entry) ([]byte, error) {
	var r object
	if err := json.Unmarshal(e.Body, &r); err != nil {
		return nil, ErrUnsupported
	}
	final := "response." + r.str("status")
	if final != "response.completed" && final != "response.incomplete" {
		return nil, ErrUnsupported
	}
	var items []object
	if err := json.Unmarshal(r["output"], &items); err != nil {
		return nil, ErrUnsupported
	}
	var out []byte
	var seq int64
	var err error
	emit := func(ev respEvent) {
		if err != nil {
			return
		}
		ev.SequenceNumber = seq
		seq++
		out, err = appendEvent(out, ev.Type, ev)
	}
	start := r.with("status", `"in_progress"`, "output", "[]", "usage", "null", "incomplete_details", "null")
	emit(respEvent{Type: "response.created", Response: start})
	emit(respEvent{Type: "response.in_progress", Response: start})
	noLogprobs := json.RawMessage("[]")
	for i, it := range items {
		idx, id := i, it.str("id")
		switch it.str("type") {
		case "message":
			var parts []object
			if err := json.Unmarshal(it["content"], &parts); err != nil {
				return nil, ErrUnsupported
			}
			emit(respEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: it.with("status", `"in_progress"`, "content", "[]")})
			for k, part := range parts {
				k := k
				switch part.str("type") {
				case "output_text":
					text := part.str("text")
					emit(respEvent{
						Type: "response.content_part.added", ItemID: id, OutputIndex: &idx, ContentIndex: &k,
						Part: part.with("text", `""`, "annotations", "[]", "logprobs", "[]"),
					})
					emit(respEvent{Type: "response.output_text.delta", ItemID: id, OutputIndex: &idx, ContentIndex: &k, Delta: &text, Logprobs: noLogprobs})
					emit(respEvent{Type: "response.output_text.done", ItemID: id, OutputIndex: &idx, ContentIndex: &k, Text: &text, Logprobs: noLogprobs})
				case "refusal":
					refusal := part.str("refusal")
					emit(respEvent{Type: "response.content_part.added", ItemID: id, OutputIndex: &idx, ContentIndex: &k, Part: part.with("refusal", `""`)})
					emit(respEvent{Type: "response.refusal.delta", ItemID: id, OutputIndex: &idx, ContentIndex: &k, Delta: &refusal})
					emit(respEvent{Type: "response.refusal.done", ItemID: id, OutputIndex: &idx, ContentIndex: &k, Refusal: &refusal})
				default:
					return nil, ErrUnsupported
				}
				pb, _ := json.Marshal(part)
				emit(respEvent{Type: "response.content_part.done", ItemID: id, OutputIndex: &idx, ContentIndex: &k, Part: pb})
			}
		case "function_call":
			args := it.str("arguments")
			emit(respEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: it.with("status", `"in_progress"`, "arguments", `""`)})
			if args != "" {
				emit(respEvent{Type: "response.function_call_arguments.delta", ItemID: id, OutputIndex: &idx, Delta: &args})
			}
			emit(respEvent{Type: "response.function_call_arguments.done", ItemID: id, OutputIndex: &idx, Name: it.str("name"), Arguments: &args})
		case "reasoning":
			var summary []object
			if len(it["summary"]) > 0 {
				if err := json.Unmarshal(it["summary"], &summary); err != nil {
					return nil, ErrUnsupported
				}
			}
			emit(respEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: it.with("summary", "[]")})
			for k, part := range summary {
				k := k
				text := part.str("text")
				emit(respEvent{Type: "response.reasoning_summary_part.added", ItemID: id, OutputIndex: &idx, SummaryIndex: &k, Part: part.with("text", `""`)})
				emit(respEvent{Type: "response.reasoning_summary_text.delta", ItemID: id, OutputIndex: &idx, SummaryIndex: &k, Delta: &text})
				emit(respEvent{Type: "response.reasoning_summary_text.done", ItemID: id, OutputIndex: &idx, SummaryIndex: &k, Text: &text})
				pb, _ := json.Marshal(part)
				emit(respEvent{Type: "response.reasoning_summary_part.done", ItemID: id, OutputIndex: &idx, SummaryIndex: &k, Part: pb})
			}
		default: // a built-in tool's call: added in progress, then done whole
			added := it.with()
			if _, ok := it["status"]; ok {
				added = it.with("status", `"in_progress"`)
			}
			emit(respEvent{Type: "response.output_item.added", OutputIndex: &idx, Item: added})
		}
		ib, _ := json.Marshal(it)
		emit(respEvent{Type: "response.output_item.done", OutputIndex: &idx, Item: ib})
	}
	emit(respEvent{Type: final, Response: e.Body})
	return out, err
}
