package translate

import (
	"bytes"
)

// eventAction is what an sseEditor does with one event: keep it (the zero
// value), drop it, or splice with into its data at at.
type eventAction struct {
	drop bool
	at   Span
	with []byte
}

// sseEditor passes an SSE stream through while dropping or editing whole
// events (the usage event the client never asked for, the model of a native
// reply). While active, the bytes of an incomplete event are held until the
// event is complete, so an edit never straddles two chunks; a chunk of whole
// events that keeps every one passes as the same slice (no body mutation).
// Inactive, every chunk passes unchanged and events are only observed.
type sseEditor struct {
	sse    SSEParser
	active bool
	fn     func(ev SSEEvent) eventAction
	// inPlace: the chunks are the data plane's own buffers, lent
	// (Inbound.ReplyInPlace): a splice no longer than what it replaces, in an
	// event wholly in the chunk, is written over the chunk, padded with
	// spaces (JSON whitespace), and the chunk passes as the same slice.
	inPlace bool

	held    []byte // raw bytes of the incomplete event, from earlier chunks
	chunk   []byte // the chunk being fed
	last    int    // offset in chunk where the current event's bytes start
	out     []byte
	scratch []byte
	changed bool // an event of the current chunk was removed or edited
	// pendLF: the last chunk ended with the CR of an event's closing CRLF;
	// a leading LF in the next chunk belongs to that event (kept or dropped).
	pendLF int8
}

const (
	lfNone int8 = iota
	lfKeep
	lfDrop
)

// feed parses chunk, calls fn for every complete event and returns the bytes
// to send now.
func (e *sseEditor) feed(chunk []byte, eos bool) ([]byte, error) {
	e.chunk, e.last, e.changed = chunk, 0, false
	heldBefore := len(e.held)
	e.out = e.out[:0]
	if e.pendLF != lfNone && len(chunk) > 0 {
		if chunk[0] == '\n' {
			if e.pendLF == lfKeep {
				e.out = append(e.out, '\n')
			} else {
				e.changed = true
			}
			e.last = 1
		}
		e.pendLF = lfNone
	}
	err := e.sse.FeedAll(chunk, eos, e.event)
	if !e.active || err != nil {
		// Passthrough (or a stream we can no longer parse: stop holding).
		e.active = false
		if len(e.held) == 0 && !e.changed && e.last == 0 {
			return chunk, err
		}
		out := make([]byte, 0, len(e.out)+len(e.held)+len(chunk)-e.last)
		out = append(append(append(out, e.out...), e.held...), chunk[e.last:]...)
		e.held = nil
		return out, err
	}
	rest := chunk[e.last:]
	if eos {
		e.out = append(e.out, e.held...)
		e.out = append(e.out, rest...)
		e.held = e.held[:0]
	} else {
		e.held = append(e.held, rest...)
	}
	if !e.changed && heldBefore == 0 && len(e.held) == 0 {
		return chunk, nil // whole events, none changed: unchanged
	}
	return bytes.Clone(e.out), nil
}

// stop makes the editor passive from the next chunk on, when nothing is held.
func (e *sseEditor) stop() {
	if len(e.held) == 0 && e.pendLF == lfNone {
		e.active = false
	}
}

func (e *sseEditor) event(ev SSEEvent) {
	act := e.fn(ev)
	if !e.active {
		return
	}
	end := e.sse.pos
	if end < 0 { // dispatched by Flush: the event ends with the chunk
		end = len(e.chunk)
	}
	raw := e.chunk[e.last:end]
	switch {
	case act.drop:
		e.changed = true
	case act.with != nil && e.inPlace && len(e.held) == 0 && spliceInPlace(raw, ev, act):
		e.out = append(e.out, raw...)
	case act.with != nil:
		e.changed = true
		e.scratch = append(append(e.scratch[:0], e.held...), raw...)
		e.out = appendEdited(e.out, e.scratch, ev, act)
	default:
		e.out = append(e.out, e.held...)
		e.out = append(e.out, raw...)
	}
	e.held = e.held[:0]
	e.last = end
	if e.sse.pos >= 0 && end == len(e.chunk) && end > 0 && e.chunk[end-1] == '\r' {
		e.pendLF = lfKeep
		if act.drop {
			e.pendLF = lfDrop
		}
	}
}

// spliceInPlace writes act's splice over raw when it is no longer than the
// span it replaces and the data is one "data:" line of raw, padded with
// spaces after it; false when it cannot (raw is then untouched).
func spliceInPlace(raw []byte, ev SSEEvent, act eventAction) bool {
	if len(act.with) > act.at.End-act.at.Start {
		return false
	}
	off := dataOffset(raw, ev.Data)
	if off < 0 {
		return false
	}
	dst := raw[off+act.at.Start : off+act.at.End]
	pad := dst[copy(dst, act.with):]
	for i := range pad {
		pad[i] = ' '
	}
	return true
}

// appendEdited appends the raw bytes of an event with act's splice applied
// to its data: in place when the data is one "data:" line of raw, else the
// event written anew (its event name and data lines; comments and ids go).
func appendEdited(dst, raw []byte, ev SSEEvent, act eventAction) []byte {
	if off := dataOffset(raw, ev.Data); off >= 0 {
		dst = append(dst, raw[:off+act.at.Start]...)
		dst = append(dst, act.with...)
		return append(dst, raw[off+act.at.End:]...)
	}
	if len(ev.Event) > 0 {
		dst = append(dst, "event: "...)
		dst = append(dst, ev.Event...)
		dst = append(dst, '\n')
	}
	data := applyEdits(ev.Data, []edit{{act.at.Start, act.at.End, act.with}})
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
	}
	return append(dst, '\n')
}

// dataOffset is the offset in raw of data when it is the value of raw's only
// "data:" line, else -1.
func dataOffset(raw, data []byte) int {
	if bytes.IndexByte(data, '\n') >= 0 {
		return -1
	}
	at := -1
	for i := 0; i < len(raw); {
		line := raw[i:]
		n := lineEnd(line)
		if n < 0 {
			n = len(line)
		}
		if bytes.HasPrefix(line[:n], []byte("data:")) {
			if at >= 0 {
				return -1
			}
			at = i + len("data:")
			if at < len(raw) && raw[at] == ' ' {
				at++
			}
		}
		i += n + 1
	}
	if at < 0 || !bytes.HasPrefix(raw[at:], data) {
		return -1
	}
	return at
}

// AppendSSEEvent appends data framed as one SSE event (no event line when
// name is ""); data is one line (JSON).
func AppendSSEEvent(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(append(append(dst, "event: "...), name...), '\n')
	}
	return append(append(append(dst, "data: "...), data...), "\n\n"...)
}
