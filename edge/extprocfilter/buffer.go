package extprocfilter

import (
	"bytes"
	"strconv"
)

// bufferChunk appends data to the direction's buffered body. The first chunk
// sizes the buffer to the whole body when its content-length is known and
// within the buffer limit: a large body then costs one allocation of its size,
// not a doubling slice whose garbage adds up to several times the body (a
// 30 MiB body grew through about 4 times its size in discarded arrays, which
// raised the heap goal and with it the process's memory). The size is taken
// only once data arrives, after the headers' reply: a client that announces
// a large body and sends nothing holds nothing.
func (d *direction) bufferChunk(data []byte) {
	if d.buf == nil && d.sizeHint > len(data) && d.sizeHint <= d.limit() {
		d.buf = make([]byte, 0, d.sizeHint)
	}
	d.buf = append(d.buf, data...)
}

// unborrow copies what the direction still holds of data, the caller's
// chunk it buffered without a copy: a body that arrives whole in its
// last chunk (the usual request) goes to the processor as it is, and is
// copied only if it is released unchanged (or still held when the call
// returns). A processor that replaces the body, as the gateway's does to
// route and translate, cost a copy of every request body for nothing.
func (d *direction) unborrow(data []byte) {
	if aliases(d.buf, data) {
		d.buf = bytes.Clone(d.buf)
	}
	if aliases(d.out, data) {
		d.out = bytes.Clone(d.out)
	}
}

// aliases reports whether a begins where b does.
func aliases(a, b []byte) bool { return len(a) > 0 && len(b) > 0 && &a[0] == &b[0] }

// noteSize records the body size the headers announce (content-length), as
// the hint bufferChunk sizes the buffer with; 0 when absent or invalid.
func (d *direction) noteSize(h Headers) {
	d.sizeHint = 0
	if v, ok := h.Get("content-length"); ok {
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			d.sizeHint = n
		}
	}
}

// ownedBody is a body mutation's bytes as a Result may carry them without a
// copy: the filter and its caller only read them, and the capacity is cut to
// the length so that appending to them copies rather than writing into the
// reply's array (a processor may share one reply between streams). Copying
// a replaced body cost a second copy of every large request.
func ownedBody(b []byte) []byte { return b[:len(b):len(b)] }
