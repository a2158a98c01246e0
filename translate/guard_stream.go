package translate

import (
	"bytes"
	"context"
)

// GuardHit is one guardrail intervention: what matched, never the text.
type GuardHit struct {
	Guardrail string
	Kind      string
	Action    string // block, redact, log
	Types     []string
	Reason    string
	Failed    bool // an external check failed (Action says what was done)
	Message   string
}

// GuardRedactor redacts streamed text, one segment per event (the raw
// content of its JSON string), holding back a bounded window.
type GuardRedactor interface {
	// Push adds a segment; it returns the segments now final, oldest first,
	// or the block that ends the stream.
	Push(seg []byte) ([][]byte, *GuardHit)
	// Flush releases everything held.
	Flush() ([][]byte, *GuardHit)
	// Hits are the interventions so far.
	Hits() []GuardHit
}

// GuardedStream passes a client's stream (SSE in its API's format, split
// anywhere) through its stream guardrails: the text of each event (chat and
// completions deltas, Responses output_text deltas, Anthropic text deltas,
// Gemini parts; StreamText) goes through the redactor's window, the event
// held until its text is final and released rewritten. Any other event
// first releases everything held and is itself checked whole (a Responses
// "done" event repeats the text). A block ends the stream with Block's
// error event and drops the rest. The processor sets the exported fields
// once, before the first Feed.
type GuardedStream struct {
	API API
	Red GuardRedactor // nil: text events are checked whole too
	// Check runs the stream guardrails on a whole event's JSON data: the
	// block that ends the stream, or the data to send instead (nil: as is).
	Check func(ctx context.Context, data []byte) (block *GuardHit, body []byte)
	// Log reports interventions; Block is the error event that ends the
	// stream for h.
	Log   func(hits []GuardHit)
	Block func(h GuardHit) []byte

	sse     SSEParser
	held    []heldEvent
	blocked bool
	logged  int // redactor hits logged
}

// heldEvent is an event whose text is in the redactor's window: the event
// as it will be written, around its text.
type heldEvent struct {
	name       string
	before     []byte // data up to the text
	after      []byte // data after it
	hasSegment bool
}

// Feed passes one chunk (eos: the last) and returns what to send, never
// nil. err is a stream it could not parse, which it then ends with a block.
func (g *GuardedStream) Feed(ctx context.Context, chunk []byte, eos bool) ([]byte, error) {
	if g.blocked {
		return []byte{}, nil
	}
	var dst []byte
	feed := func(ev SSEEvent) {
		if !g.blocked {
			dst = g.event(ctx, dst, ev)
		}
	}
	err := g.sse.Feed(chunk, feed)
	if err == nil && eos {
		err = g.sse.Flush(feed)
		if !g.blocked {
			dst = g.release(dst)
		}
	}
	if err != nil && !g.blocked {
		g.blocked = true
		dst = append(dst, g.Block(GuardHit{Message: "The stream could not be checked by its guardrails."})...)
	}
	if dst == nil {
		dst = []byte{}
	}
	return dst, err
}

// event takes one event of the client's stream.
func (g *GuardedStream) event(ctx context.Context, dst []byte, ev SSEEvent) []byte {
	txt, ok := StreamText(g.API, ev.Data)
	if !ok || g.Red == nil {
		dst = g.release(dst)
		if g.blocked {
			return dst
		}
		data := ev.Data
		if bytes.HasPrefix(data, []byte("{")) {
			block, body := g.Check(ctx, data)
			if block != nil {
				return g.block(dst, *block)
			}
			if body != nil {
				data = body
			}
		}
		return AppendSSEEvent(dst, string(ev.Event), data)
	}
	g.held = append(g.held, heldEvent{
		name: string(ev.Event), hasSegment: true,
		before: append([]byte(nil), ev.Data[:txt.Start]...), after: append([]byte(nil), ev.Data[txt.End:]...),
	})
	segs, blk := g.Red.Push(ev.Data[txt.Start:txt.End])
	if blk != nil {
		return g.block(dst, *blk)
	}
	return g.emit(dst, segs)
}

// release releases what the redactor holds (the stream ended or a non-text
// event came).
func (g *GuardedStream) release(dst []byte) []byte {
	if g.Red == nil || len(g.held) == 0 {
		return dst
	}
	segs, blk := g.Red.Flush()
	if blk != nil {
		return g.block(dst, *blk)
	}
	return g.emit(dst, segs)
}

// emit writes the first len(segs) held events with their final text.
func (g *GuardedStream) emit(dst []byte, segs [][]byte) []byte {
	for i, seg := range segs {
		h := g.held[i]
		data := make([]byte, 0, len(h.before)+len(seg)+len(h.after))
		data = append(append(append(data, h.before...), seg...), h.after...)
		dst = AppendSSEEvent(dst, h.name, data)
	}
	g.held = append(g.held[:0], g.held[len(segs):]...)
	if hits := g.Red.Hits(); len(hits) > g.logged {
		g.Log(hits[g.logged:])
		g.logged = len(hits)
	}
	return dst
}

// block ends the stream with the error event.
func (g *GuardedStream) block(dst []byte, h GuardHit) []byte {
	g.blocked = true
	g.held = nil
	g.Log([]GuardHit{h})
	return append(dst, g.Block(h)...)
}
