package edge

import "io"

// wholeBody is a buffered request body given to http.Transport (the bodies
// too large for the HTTP/1.1 fast path). It lets go of the bytes once read to
// the end or closed: the transport keeps its last request reachable from an
// idle pooled connection, and with it, through an io.NopCloser'd
// bytes.Reader, a large body long after the exchange ended.
type wholeBody struct{ b []byte }

func (w *wholeBody) Read(p []byte) (int, error) {
	if len(w.b) == 0 {
		w.b = nil
		return 0, io.EOF
	}
	n := copy(p, w.b)
	w.b = w.b[n:]
	if len(w.b) == 0 {
		w.b = nil
	}
	return n, nil
}

// WriteTo writes the rest at once (io.Copy's path: no copy through a buffer).
func (w *wholeBody) WriteTo(dst io.Writer) (int64, error) {
	b := w.b
	w.b = nil
	n, err := dst.Write(b)
	return int64(n), err
}

func (w *wholeBody) Close() error {
	w.b = nil
	return nil
}
