package guard

import "slices"

// DefaultWindow is the hold-back window of a Stream, in bytes of text: more
// than the shortest match of every built-in check, so a match split across
// chunks is seen whole before any of it is released.
const DefaultWindow = 256

// maxHold bounds what a Stream holds for a match still growing at the end of
// the text (a long key, a private-key block): past it, the text is released
// as it is, redacted as far as seen.
const maxHold = 16 * DefaultWindow

// contextBytes of released text stay before the pending text, so a match is
// judged with what precedes it (a longer number, a word it is glued to).
const contextBytes = DefaultWindow

// Redactor applies the built-in guardrails of a Set that run on streams to
// streamed text, segment by segment (one segment per streamed event's text,
// as the raw content of its JSON string). It holds back the last Window
// bytes, and any match that reaches into them, so a pattern split across
// segments is caught; everything before is released, redacted, at once:
// the delay to a token is at most the window.
//
// Segments are released whole and in order, each with its text redacted: a
// match spanning several segments puts its placeholder in the first and
// removes its text from the others.
type Redactor struct {
	gs     []*Guardrail
	window int
	segs   [][]byte // pending segments, owned
	ctx    int      // buf starts with this many bytes of released text (context)
	buf    []byte   // context, then the concatenation of segs
	mbuf   []byte
	fs     []Finding
	hits   []Hit
	block  *Hit
}

// NewStream returns the redactor of s's stream guardrails (built-in checks
// only), nil when s has none.
func (s Set) NewRedactor(window int) *Redactor {
	var gs []*Guardrail
	for _, g := range s {
		if g.On&Stream != 0 && g.find != nil {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 {
		return nil
	}
	if window <= 0 {
		window = DefaultWindow
	}
	return &Redactor{gs: gs, window: window}
}

// Push adds the next segment and returns the segments now final (oldest
// first, redacted), and the blocking hit when a blocking guardrail matched,
// after which the stream must end (Push returns nothing more).
func (st *Redactor) Push(seg []byte) ([][]byte, *Hit) {
	if st.block != nil {
		return nil, st.block
	}
	st.segs = append(st.segs, append([]byte(nil), seg...))
	st.buf = append(st.buf, seg...)
	return st.release(false)
}

// Flush releases everything held (the stream ended).
func (st *Redactor) Flush() ([][]byte, *Hit) {
	if st.block != nil {
		return nil, st.block
	}
	return st.release(true)
}

// Hits returns the interventions so far (redactions and logs).
func (st *Redactor) Hits() []Hit { return st.hits }

// Pending is the number of segments held.
func (st *Redactor) Pending() int { return len(st.segs) }

func (st *Redactor) release(all bool) ([][]byte, *Hit) {
	// Offsets below are in buf: the context, then the pending text. A match
	// starting in the context was decided when it was released.
	text := st.buf
	st.mbuf = maskSegment(append(st.mbuf[:0], make([]byte, len(text))...), text)
	boundary := len(text) - st.window
	if all || len(text)-st.ctx > maxHold {
		boundary = len(text)
	}
	st.fs = st.fs[:0]
	var per [8]int // end of each guardrail's findings in st.fs
	ends := per[:0]
	for _, g := range st.gs {
		from := len(st.fs)
		st.fs = g.find.find(st.mbuf, st.fs)
		st.fs = slices.DeleteFunc(st.fs[:len(st.fs):len(st.fs)], func(f Finding) bool { return f.Start < st.ctx })
		if len(st.fs) < from {
			from = len(st.fs)
		}
		if g.Action == ActionBlock && len(st.fs) > from {
			h := Hit{Guardrail: g.Name, Kind: g.Kind, Action: ActionBlock, Types: types(st.fs[from:])}
			st.block = &h
			return nil, st.block
		}
		ends = append(ends, len(st.fs))
	}
	for _, f := range st.fs {
		// A match reaching into the window, or to the end of the text, may
		// still grow: hold it whole.
		if f.Start < boundary && (f.End > boundary || !all && f.End == len(text)) && boundary < len(text) {
			boundary = f.Start
		}
	}
	// Release the leading segments that end at or before the boundary and
	// cut no match.
	n, end := 0, st.ctx
	for n < len(st.segs) && end+len(st.segs[n]) <= boundary {
		end += len(st.segs[n])
		n++
	}
	for n > 0 && cuts(st.fs, end) {
		n--
		end -= len(st.segs[n])
	}
	if n == 0 {
		return nil, nil
	}
	var redactFs []Finding
	from := 0
	for i, g := range st.gs {
		var final []Finding
		for _, f := range st.fs[from:ends[i]] {
			if f.End <= end {
				final = append(final, f)
			}
		}
		from = ends[i]
		if len(final) == 0 {
			continue
		}
		st.hits = append(st.hits, Hit{Guardrail: g.Name, Kind: g.Kind, Action: g.Action, Types: types(final)})
		if g.Action == ActionRedact {
			redactFs = append(redactFs, final...)
		}
	}
	out := make([][]byte, n)
	redactFs = normalize(redactFs)
	off := st.ctx
	for i := 0; i < n; i++ {
		seg := st.segs[i]
		out[i] = redactSegment(seg, off, redactFs)
		off += len(seg)
	}
	st.segs = append(st.segs[:0], st.segs[n:]...)
	// Keep up to contextBytes of what was released, as the context of the
	// next matches (a number or a token is not cut at the boundary).
	keep := max(end-contextBytes, 0)
	st.buf = append(st.buf[:0], st.buf[keep:]...)
	st.ctx = end - keep
	return out, nil
}

// cuts reports whether some finding spans the offset at.
func cuts(fs []Finding, at int) bool {
	for _, f := range fs {
		if f.Start < at && f.End > at {
			return true
		}
	}
	return false
}

// redactSegment applies findings (offsets in the concatenation, sorted, not
// overlapping) to the segment starting at off: a finding that starts in it
// becomes its placeholder, the part of a finding that started before is
// removed.
func redactSegment(seg []byte, off int, fs []Finding) []byte {
	var out []byte
	at := 0
	for _, f := range fs {
		s, e := f.Start-off, f.End-off
		if e <= 0 || s >= len(seg) {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(seg))
		}
		s = max(s, 0)
		out = append(out, seg[at:s]...)
		if f.Start >= off {
			out = append(out, '[')
			out = append(out, f.Type...)
			out = append(out, ']')
		}
		at = min(e, len(seg))
	}
	if out == nil {
		return seg
	}
	return append(out, seg[at:]...)
}
