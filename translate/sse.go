package translate

import (
	"bytes"
)

// maxSSEEvent bounds the bytes of one SSE line or event the parser holds.
const maxSSEEvent = 8 << 20

// SSEEvent is one dispatched server-sent event. Its slices are valid only
// during the callback.
type SSEEvent struct {
	Event []byte // the "event:" field, empty for the default "message"
	Data  []byte // the "data:" lines joined with '\n'
}

// SSEParser splits a text/event-stream, fed in chunks split anywhere (inside a
// line, between CR and LF), into events, following the WHATWG event-stream
// rules: lines end with CRLF, LF or CR; ':' starts a comment; "data:" lines
// accumulate; a blank line dispatches. It copies only what spans chunks.
type SSEParser struct {
	line    []byte // the incomplete line carried over from the previous chunk
	data    []byte
	event   []byte
	hasData bool
	skipLF  bool // the previous chunk ended with CR: a leading LF belongs to it
	// pos is, during a callback from Feed, the offset in the fed chunk just
	// past the blank line that dispatched the event (-1 from Flush).
	pos int
}

// Feed parses chunk and calls fn for every event it completes.
func (p *SSEParser) Feed(chunk []byte, fn func(ev SSEEvent)) error {
	total := len(chunk)
	if p.skipLF && len(chunk) > 0 {
		if chunk[0] == '\n' {
			chunk = chunk[1:]
		}
		p.skipLF = false
	}
	for len(chunk) > 0 {
		i := lineEnd(chunk)
		if i < 0 {
			if len(p.line)+len(chunk) > maxSSEEvent {
				return ErrSSETooLarge
			}
			p.line = append(p.line, chunk...)
			return nil
		}
		line := chunk[:i]
		if len(p.line) > 0 {
			if len(p.line)+len(line) > maxSSEEvent {
				return ErrSSETooLarge
			}
			p.line = append(p.line, line...)
			line = p.line
		}
		if chunk[i] == '\r' {
			if i+1 < len(chunk) {
				if chunk[i+1] == '\n' {
					i++
				}
			} else {
				p.skipLF = true
			}
		}
		chunk = chunk[i+1:]
		p.pos = total - len(chunk)
		if err := p.processLine(line, fn); err != nil {
			return err
		}
		p.line = p.line[:0]
	}
	return nil
}

// lineEnd is the index of the first CR or LF in b, or -1 (two vectorised
// byte searches: bytes.IndexAny builds a set on every call).
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	limit := b
	if i >= 0 {
		limit = b[:i]
	}
	if j := bytes.IndexByte(limit, '\r'); j >= 0 {
		return j
	}
	return i
}

// FeedAll feeds chunk and, at the end of the stream (eos), flushes: what
// every stream translator does with each body chunk.
func (p *SSEParser) FeedAll(chunk []byte, eos bool, fn func(ev SSEEvent)) error {
	err := p.Feed(chunk, fn)
	if err == nil && eos {
		err = p.Flush(fn)
	}
	return err
}

// Flush ends the stream: an event whose closing blank line never came is
// dispatched anyway (providers sometimes omit it after the last event).
func (p *SSEParser) Flush(fn func(ev SSEEvent)) error {
	p.pos = -1
	if len(p.line) > 0 {
		if err := p.processLine(p.line, fn); err != nil {
			return err
		}
		p.line = p.line[:0]
	}
	p.dispatch(fn)
	return nil
}

func (p *SSEParser) processLine(line []byte, fn func(ev SSEEvent)) error {
	if len(line) == 0 {
		p.dispatch(fn)
		return nil
	}
	if line[0] == ':' {
		return nil
	}
	name, value := line, []byte(nil)
	if c := bytes.IndexByte(line, ':'); c >= 0 {
		name, value = line[:c], line[c+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if len(p.data)+len(value)+1 > maxSSEEvent {
			return ErrSSETooLarge
		}
		if p.hasData {
			p.data = append(p.data, '\n')
		}
		p.data = append(p.data, value...)
		p.hasData = true
	case "event":
		p.event = append(p.event[:0], value...)
	}
	return nil
}

func (p *SSEParser) dispatch(fn func(ev SSEEvent)) {
	if p.hasData {
		fn(SSEEvent{Event: p.event, Data: p.data})
	}
	p.data = p.data[:0]
	p.event = p.event[:0]
	p.hasData = false
}
