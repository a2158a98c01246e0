package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Errors of the response parser.
var (
	// errMalformed is wrapped by every error about bytes that are not an
	// HTTP/1.x response this client understands.
	errMalformed = errors.New("malformed response")
	// errNoResponse: the connection ended before the first byte of a
	// response (a kept-alive connection the server had closed).
	errNoResponse = errors.New("connection closed before the response")
)

const (
	// maxBody bounds a response body.
	maxBody = 64 << 20
	// maxHeaders bounds the header lines of a response head.
	maxHeaders = 128
)

// response is one parsed response. Its slices point into the reader's
// buffers and are valid until the next read.
type response struct {
	status int
	ctype  []byte // the Content-Type value
	body   []byte // the whole body, chunked encoding removed
	close  bool   // the server closes the connection after this response
}

// reader parses HTTP/1.x responses from one connection: the status line,
// the headers it needs (Content-Length, Transfer-Encoding, Connection,
// Content-Type) and the body, whole, sized by Content-Length, by chunked
// transfer coding or by the end of the connection. It allocates only
// while its buffers grow.
type reader struct {
	br    *bufio.Reader
	body  []byte
	ctype []byte
}

func newReader(r io.Reader) *reader {
	return &reader{br: bufio.NewReaderSize(r, 16<<10), body: make([]byte, 0, 4<<10)}
}

// reset makes r read from a new connection.
func (r *reader) reset(src io.Reader) { r.br.Reset(src) }

// read reads one final response (interim 1xx responses are skipped).
func (r *reader) read() (response, error) {
	for first := true; ; first = false {
		resp, length, chunked, err := r.head(first)
		if err != nil {
			return resp, err
		}
		switch {
		case resp.status < 200:
			if resp.status == 101 {
				return resp, fmt.Errorf("%w: 101 Switching Protocols", errMalformed)
			}
			continue
		case resp.status == 204 || resp.status == 304:
			resp.body = r.body[:0]
		case chunked:
			resp.body, err = r.chunked()
		case length >= 0:
			resp.body, err = r.sized(length)
		default:
			// No length: the body ends with the connection.
			resp.close = true
			resp.body, err = r.untilEOF()
		}
		return resp, err
	}
}

// head reads a status line and headers; length is -1 when there is no
// Content-Length.
func (r *reader) head(first bool) (resp response, length int64, chunked bool, err error) {
	line, err := r.line()
	if err != nil {
		if first && len(line) == 0 && (errors.Is(err, io.EOF) || isReset(err)) {
			return resp, 0, false, fmt.Errorf("%w: %w", errNoResponse, err)
		}
		return resp, 0, false, fmt.Errorf("status line: %w", err)
	}
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[7] < '0' || line[7] > '9' ||
		line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return resp, 0, false, fmt.Errorf("%w: status line %q", errMalformed, clip(line))
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return resp, 0, false, fmt.Errorf("%w: status line %q", errMalformed, clip(line))
		}
		resp.status = resp.status*10 + int(d-'0')
	}
	if resp.status < 100 {
		return resp, 0, false, fmt.Errorf("%w: status line %q", errMalformed, clip(line))
	}
	keepAlive := line[7] != '0' // HTTP/1.0 closes unless told otherwise
	length = -1
	r.ctype = r.ctype[:0]
	for n := 0; ; n++ {
		line, err = r.line()
		if err != nil {
			return resp, 0, false, fmt.Errorf("header: %w", err)
		}
		if len(line) == 0 {
			break
		}
		if n == maxHeaders {
			return resp, 0, false, fmt.Errorf("%w: more than %d header lines", errMalformed, maxHeaders)
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 || bytes.ContainsAny(line[:i], " \t") {
			return resp, 0, false, fmt.Errorf("%w: header line %q", errMalformed, clip(line))
		}
		name, value := line[:i], bytes.Trim(line[i+1:], " \t")
		switch {
		case bytes.EqualFold(name, []byte("content-length")):
			n, ok := parseLength(value)
			if !ok || (length >= 0 && n != length) {
				return resp, 0, false, fmt.Errorf("%w: Content-Length %q", errMalformed, clip(value))
			}
			length = n
		case bytes.EqualFold(name, []byte("transfer-encoding")):
			if !lastToken(value, "chunked") {
				return resp, 0, false, fmt.Errorf("%w: unsupported Transfer-Encoding %q", errMalformed, clip(value))
			}
			chunked = true
		case bytes.EqualFold(name, []byte("connection")):
			if hasToken(value, "close") {
				resp.close = true
			} else if hasToken(value, "keep-alive") {
				keepAlive = true
			}
		case bytes.EqualFold(name, []byte("content-type")):
			r.ctype = append(r.ctype, value...)
		}
	}
	if !keepAlive {
		resp.close = true
	}
	resp.ctype = r.ctype
	return resp, length, chunked, nil
}

// line reads one line without its CR LF (a bare LF is accepted).
func (r *reader) line() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line longer than %d bytes", errMalformed, r.br.Size())
		}
		if errors.Is(err, io.EOF) && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// sized reads a body of n bytes.
func (r *reader) sized(n int64) ([]byte, error) {
	if n > maxBody {
		return nil, fmt.Errorf("%w: body of %d bytes", errMalformed, n)
	}
	b := grow(r.body[:0], int(n))
	if _, err := io.ReadFull(r.br, b); err != nil {
		return nil, fmt.Errorf("body: %w", unexpected(err))
	}
	r.body = b
	return b, nil
}

// chunked reads a chunked body and its trailers.
func (r *reader) chunked() ([]byte, error) {
	b := r.body[:0]
	for {
		line, err := r.line()
		if err != nil {
			return nil, fmt.Errorf("chunk size: %w", unexpected(err))
		}
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, ok := parseHex(bytes.TrimRight(line, " \t"))
		if !ok {
			return nil, fmt.Errorf("%w: chunk size %q", errMalformed, clip(line))
		}
		if size == 0 {
			break
		}
		if int64(len(b))+size > maxBody {
			return nil, fmt.Errorf("%w: body over %d bytes", errMalformed, maxBody)
		}
		n := len(b)
		b = grow(b, n+int(size))
		if _, err := io.ReadFull(r.br, b[n:]); err != nil {
			return nil, fmt.Errorf("chunk: %w", unexpected(err))
		}
		if line, err = r.line(); err != nil {
			return nil, fmt.Errorf("chunk end: %w", unexpected(err))
		} else if len(line) != 0 {
			return nil, fmt.Errorf("%w: no CRLF after a chunk", errMalformed)
		}
	}
	r.body = b
	for n := 0; ; n++ {
		line, err := r.line()
		if err != nil {
			return nil, fmt.Errorf("trailer: %w", unexpected(err))
		}
		if len(line) == 0 {
			return b, nil
		}
		if n == maxHeaders {
			return nil, fmt.Errorf("%w: more than %d trailer lines", errMalformed, maxHeaders)
		}
	}
}

// untilEOF reads a body that ends with the connection.
func (r *reader) untilEOF() ([]byte, error) {
	b := r.body[:0]
	for {
		if len(b) == cap(b) {
			if len(b) >= maxBody {
				return nil, fmt.Errorf("%w: body over %d bytes", errMalformed, maxBody)
			}
			b = append(b, 0)[:len(b)]
		}
		n, err := r.br.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			r.body = b
			return b, nil
		}
		if err != nil {
			return nil, fmt.Errorf("body: %w", err)
		}
	}
}

// grow returns b resized to n bytes, reallocated only when its capacity is short.
func grow(b []byte, n int) []byte {
	if n <= cap(b) {
		return b[:n]
	}
	nb := make([]byte, n, max(n, 2*cap(b)))
	copy(nb, b)
	return nb
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, d := range b {
		if d < '0' || d > '9' {
			return 0, false
		}
		n = n*10 + int64(d-'0')
	}
	return n, true
}

func parseHex(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, d := range b {
		switch {
		case d >= '0' && d <= '9':
			d -= '0'
		case d >= 'a' && d <= 'f':
			d -= 'a' - 10
		case d >= 'A' && d <= 'F':
			d -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}

// hasToken reports whether the comma-separated list v holds tok (ASCII case-insensitive).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte{','})
		if bytes.EqualFold(bytes.Trim(t, " \t"), []byte(tok)) {
			return true
		}
	}
	return false
}

// lastToken reports whether the last element of the comma-separated list v is tok.
func lastToken(v []byte, tok string) bool {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return bytes.EqualFold(bytes.Trim(v, " \t"), []byte(tok))
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}
