package mockllm

import (
	"net/http"
)

// stream writes SSE events, one flush per event, honouring
// x-mock-disconnect-after and counting what was delivered.
type stream struct {
	c      *call
	ctr    *counters
	line   *counters // the report's line (reports.go), nil when not reported
	rc     *http.ResponseController
	events int
	out    []byte // the event being written (the writer copies it)
}

// startStream waits the latency, writes the 200 headers and records the
// request.
func (s *Server) startStream(c *call, b billed) (*stream, bool) {
	if !sleep(c.r.Context(), c.latency) {
		return nil, false
	}
	st := &stream{c: c, ctr: s.counters(c.key), rc: http.NewResponseController(c.w)}
	h := c.w.Header()
	h["Content-Type"] = hvEventStream
	h["Cache-Control"] = hvNoCache
	c.w.WriteHeader(http.StatusOK)
	if err := st.rc.Flush(); err != nil {
		st.ctr.aborted.Add(1)
		return nil, false
	}
	b.record(st.ctr)
	st.line = s.recordLine(c, b)
	return st, true
}

// send writes one event (event may be "" for data-only events); it reports false when the stream ended (client gone, or the
// disconnect count was reached, in which case the connection is closed).
func (st *stream) send(event string, data []byte) bool {
	if st.c.disconnect >= 0 && st.events >= st.c.disconnect {
		st.ctr.aborted.Add(1)
		abort(st.c.w)
		return false
	}
	out := st.out[:0]
	if event != "" {
		out = append(out, "event: "...)
		out = append(out, event...)
		out = append(out, '\n')
	}
	out = append(out, "data: "...)
	out = append(out, data...)
	out = append(out, '\n', '\n')
	st.out = out
	if _, err := st.c.w.Write(out); err != nil {
		st.ctr.aborted.Add(1)
		return false
	}
	if err := st.rc.Flush(); err != nil {
		st.ctr.aborted.Add(1)
		return false
	}
	st.events++
	return true
}

// content sends a content event after the chunk delay (not before the first
// content chunk) and counts its words as delivered output.
func (st *stream) content(i int, event string, data []byte, words int64) bool {
	if i > 0 && !sleep(st.c.r.Context(), st.c.chunkDelay) {
		st.ctr.aborted.Add(1)
		return false
	}
	if !st.send(event, data) {
		return false
	}
	st.ctr.output.Add(words)
	if st.line != nil {
		st.line.output.Add(words)
	}
	return true
}

// writeJSON waits the latency, writes a whole 200 JSON reply and records it; with
// x-mock-disconnect-after it closes the connection instead.
func (s *Server) writeJSON(c *call, body []byte, b billed, output int64) {
	if !sleep(c.r.Context(), c.latency) {
		return
	}
	ctr := s.counters(c.key)
	if c.disconnect >= 0 {
		ctr.aborted.Add(1)
		abort(c.w)
		return
	}
	setJSON(c.w.Header(), len(body))
	c.w.WriteHeader(http.StatusOK)
	if _, err := c.w.Write(body); err != nil {
		ctr.aborted.Add(1)
		return
	}
	b.record(ctr)
	ctr.output.Add(output)
	if line := s.recordLine(c, b); line != nil {
		line.output.Add(output)
	}
}
