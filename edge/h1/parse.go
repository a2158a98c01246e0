package h1

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"
)

// headParser reads the HTTP/1.x request heads of one downstream connection,
// or the response heads of one upstream connection. It accepts and refuses
// exactly what net/http's ReadRequest (ReadResponse) does — differential fuzz
// tests hold it to that — plus, for requests (strict), the refusals of
// docs/dataplane.md; it builds no header map: the fields keep their order
// with lower-case names, as Envoy's codec hands them on, and all their text
// is one string. Two differences, both Envoy's behaviour: no Cache-Control is
// added for "Pragma: no-cache", and an unsupported Transfer-Encoding is a
// *teError (501) rather than a 400.
type headParser struct {
	buf   []byte // the head's text, names lower-cased
	spans []fieldSpan
	// hb holds buf and spans between a head's reset and its release: the
	// parsed head's strings are copies, so a connection waiting for its
	// next head holds no arrays.
	hb *headBufs

	// strict applies the request rules of docs/dataplane.md on top of
	// net/http's (the server's parser; an upstream's responses are read
	// with net/http's rules): lines end with CRLF, no obs-fold, at most
	// maxFields fields and maxBytes bytes of head, and the framing rules of
	// requestFraming.
	strict    bool
	maxBytes  int // 0: no bound
	maxFields int // 0: no bound
	n         int // head bytes read so far
}

// maxKeptHead is the largest head buffer a connection keeps between
// messages: one large head does not pin its buffer for the connection's life.
const maxKeptHead = 16 << 10

// headBufs are a parser's working arrays, pooled.
type headBufs struct {
	buf   []byte
	spans []fieldSpan
}

var headBufPool = sync.Pool{New: func() any { return new(headBufs) }}

func (p *headParser) reset() {
	if p.hb == nil {
		p.hb = headBufPool.Get().(*headBufs) //nolint:forcetypeassert // the pool holds only these
		p.buf, p.spans = p.hb.buf, p.hb.spans
	}
	if cap(p.buf) > maxKeptHead {
		p.buf, p.spans = nil, nil
	}
	p.buf, p.spans, p.n = p.buf[:0], p.spans[:0], 0
}

// release gives the working arrays back once a head is parsed (or failed):
// n stays for the caller.
func (p *headParser) release() {
	if p.hb == nil {
		return
	}
	p.hb.buf, p.hb.spans = nil, nil
	if cap(p.buf) <= maxKeptHead {
		p.hb.buf, p.hb.spans = p.buf[:0], p.spans[:0]
	}
	headBufPool.Put(p.hb)
	p.hb, p.buf, p.spans = nil, nil, nil
}

// fieldSpan locates one field in headParser.buf.
type fieldSpan struct{ k0, k1, v0, v1 int }

// reqHead is a parsed request head.
type reqHead struct {
	method, target, proto string
	major, minor          int
	url                   url.URL
	host                  string
	// fields are the header fields, names lower-cased, in order, after
	// net/http's framing rules: Transfer-Encoding and (with chunked)
	// Content-Length removed, a repeated Content-Length kept once, a
	// declared Trailer removed when the body is chunked.
	fields        Fields
	contentLength int64 // -1: chunked
	close         bool
	trailer       http.Header // declared trailer names (chunked bodies)
}

// teError is a Transfer-Encoding the server does not implement (501).
type teError struct{ msg string }

func (e *teError) Error() string { return e.msg }

var errMalformedHead = errors.New("edge: malformed request head")

// Request heads refused by the rules of docs/dataplane.md that net/http's
// parser does not have (the differential tests tell them apart).
var (
	// errStrict: a head Envoy's codec (or RFC 9112) refuses with a 400.
	errStrict = fmt.Errorf("%w (Envoy's framing rules)", errMalformedHead)
	// errHeadersTooLarge: more than max_request_headers_kb of head (431).
	errHeadersTooLarge = errors.New("edge: request headers too large")
	// errTooManyHeaders: more than max_headers_count fields (431).
	errTooManyHeaders = errors.New("edge: too many request headers")
)

func refused(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errStrict}, args...)...)
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errMalformedHead}, args...)...)
}

// read reads one request head from br. io.EOF: the connection ended before
// a request began.
func (p *headParser) read(br *bufio.Reader) (*reqHead, error) {
	p.reset()
	if err := p.readLine(br); err != nil {
		return nil, err
	}
	h, err := p.readRest(br)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return h, err
}

func (p *headParser) readRest(br *bufio.Reader) (*reqHead, error) {
	// The request line is checked before the fields are read, as net/http
	// does.
	h := &reqHead{}
	line := string(p.buf)
	var ok bool
	h.method, h.target, h.proto, ok = parseRequestLine(line)
	if !ok {
		return nil, malformed("malformed request line %q", line)
	}
	if !httpguts.ValidHeaderFieldName(h.method) {
		return nil, malformed("invalid method %q", h.method)
	}
	if h.major, h.minor, ok = http.ParseHTTPVersion(h.proto); !ok {
		return nil, malformed("malformed HTTP version %q", h.proto)
	}
	if err := h.parseTarget(); err != nil {
		return nil, err
	}
	if err := p.readFields(br); err != nil {
		return nil, err
	}
	// One allocation for the text of all the fields.
	return h, h.frame(string(p.buf), p.spans, p.strict)
}

// readFields reads a field block up to its blank line into p.buf and
// p.spans, names lower-cased, with net/textproto's checks and folding plus
// the server's check of header names.
func (p *headParser) readFields(br *bufio.Reader) error {
	p.buf, p.spans = p.buf[:0], p.spans[:0]
	// The first field line cannot begin with a space (net/textproto).
	if b, err := br.Peek(1); err == nil && (b[0] == ' ' || b[0] == '\t') {
		return malformed("header block begins with a space")
	}
	for {
		s := len(p.buf)
		if err := p.readField(br); err != nil {
			return err
		}
		if len(p.buf) == s {
			return nil // the blank line
		}
		kv := p.buf[s:]
		colon := bytes.IndexByte(kv, ':')
		key := kv[:colon]
		if len(key) == 0 {
			return malformed("empty header name")
		}
		for i, c := range key {
			if !httpguts.IsTokenRune(rune(c)) {
				return malformed("invalid header name %q", key)
			}
			if 'A' <= c && c <= 'Z' {
				key[i] = c + 'a' - 'A'
			}
		}
		for _, c := range kv[colon+1:] {
			if !validValueByte(c) {
				return malformed("invalid header value")
			}
		}
		v0 := s + colon + 1
		for v0 < len(p.buf) && (p.buf[v0] == ' ' || p.buf[v0] == '\t') {
			v0++
		}
		p.spans = append(p.spans, fieldSpan{s, s + colon, v0, len(p.buf)})
		if p.maxFields > 0 && len(p.spans) > p.maxFields {
			return errTooManyHeaders // L2: max_headers_count
		}
	}
}

// check applies the checks net/http's server adds to ReadRequest's; the
// header names and values were checked as they were read, and h.host is the
// absolute-form target's authority when there is one.
func (h *reqHead) check() string {
	switch {
	case h.major != 1 || h.minor > 1:
		return "unsupported protocol version"
	case h.minor == 1 && h.host == "":
		return "missing required Host header"
	case h.method == http.MethodConnect:
		return "unsupported method"
	case !httpguts.ValidHostHeader(h.host):
		return "malformed Host header"
	}
	return ""
}

// parseRequestLine splits "METHOD TARGET PROTO" as net/http does.
func parseRequestLine(line string) (method, target, proto string, ok bool) {
	method, rest, ok1 := strings.Cut(line, " ")
	target, proto, ok2 := strings.Cut(rest, " ")
	return method, target, proto, ok1 && ok2
}

// parseTarget checks the request target as url.ParseRequestURI does, fast
// for the origin form.
func (h *reqHead) parseTarget() error {
	t := h.target
	if t != "" && t[0] == '/' {
		path, query, _ := strings.Cut(t, "?")
		for i := 0; i < len(t); i++ {
			if c := t[i]; c < ' ' || c == 0x7f {
				return malformed("invalid control character in URL")
			}
		}
		if strings.IndexByte(path, '%') >= 0 {
			p, err := url.PathUnescape(path)
			if err != nil {
				return malformed("%v", err)
			}
			h.url.RawPath, path = path, p
		}
		h.url.Path, h.url.RawQuery = path, query
		if strings.HasSuffix(t, "?") && strings.Count(t, "?") == 1 {
			h.url.ForceQuery = true
		}
		return nil
	}
	// "*", absolute and authority forms: rare, net/net/url's way.
	raw := t
	justAuthority := h.method == http.MethodConnect && !strings.HasPrefix(raw, "/")
	if justAuthority {
		raw = "http://" + raw
	}
	u, err := url.ParseRequestURI(raw)
	if err != nil {
		return malformed("%v", err)
	}
	if justAuthority {
		u.Scheme = ""
	}
	h.url = *u
	return nil
}

// framing is what a message's fields say about its body and connection,
// by net/http's rules (readTransfer, fixLength, shouldClose, fixTrailer).
type framing struct {
	hosts         int
	host          string
	hasCL         bool
	contentLength int64
	chunked       bool
	close         bool
	trailer       http.Header
	fields        Fields
}

// frame reads the framing of a message of the given version from its
// fields (text is the block, spans its fields) and fills f.fields with them,
// minus Transfer-Encoding, Content-Length after chunked or repeated, and a
// chunked message's Trailer; dropConnClose also drops Connection when it
// says close (net/http's responses); keepCL keeps a chunked message's
// Content-Length (responses that have no body, whose length net/http
// checks before chunking).
func (f *framing) frame(text string, spans []fieldSpan, major, minor int, dropConnClose, keepCL bool) error {
	var (
		cls           int
		firstCL       string
		te            []string
		conn          []string
		trailerValues []string
	)
	for _, sp := range spans {
		k, v := text[sp.k0:sp.k1], text[sp.v0:sp.v1]
		switch k {
		case "host":
			if f.hosts++; f.hosts == 1 {
				f.host = v
			}
		case "content-length":
			if cls++; cls == 1 {
				firstCL = textproto.TrimString(v)
			} else if textproto.TrimString(v) != firstCL {
				return malformed("multiple Content-Length headers")
			}
		case "transfer-encoding":
			te = append(te, v)
		case "connection":
			conn = append(conn, v)
		case "trailer":
			trailerValues = append(trailerValues, v)
		}
	}
	hasClose := httpguts.HeaderValuesContainsToken(conn, "close")
	switch {
	case major < 1:
		f.close = true
	case major == 1 && minor == 0:
		f.close = hasClose || !httpguts.HeaderValuesContainsToken(conn, "keep-alive")
	default:
		f.close = hasClose
	}
	dropConn := dropConnClose && hasClose && major >= 1 && (major != 1 || minor != 0)
	if te != nil && (major > 1 || major == 1 && minor >= 1) {
		// Like net/http (and nginx): one Transfer-Encoding, "chunked".
		if len(te) != 1 {
			return &teError{fmt.Sprintf("too many transfer encodings: %q", te)}
		}
		if !strings.EqualFold(te[0], "chunked") {
			return &teError{fmt.Sprintf("unsupported transfer encoding: %q", te[0])}
		}
		f.chunked = true
	}
	if cls > 0 {
		if firstCL == "" {
			return malformed("invalid empty Content-Length")
		}
		n, err := strconv.ParseUint(firstCL, 10, 63)
		if err != nil {
			return malformed("bad Content-Length %q", firstCL)
		}
		f.hasCL, f.contentLength = true, int64(n)
	}
	if f.chunked && trailerValues != nil {
		t, err := declaredTrailer(trailerValues)
		if err != nil {
			return err
		}
		f.trailer = t
	}
	f.fields = make(Fields, 0, len(spans))
	seenCL := false
	for _, sp := range spans {
		k := text[sp.k0:sp.k1]
		switch k {
		case "transfer-encoding":
			continue
		case "content-length":
			if f.chunked && !keepCL || seenCL {
				continue
			}
			seenCL = true
		case "trailer":
			if f.chunked {
				continue
			}
		case "connection":
			if dropConn {
				continue
			}
		}
		f.fields = append(f.fields, Field{Key: k, Value: text[sp.v0:sp.v1]})
	}
	return nil
}

// frame applies the framing rules of a request.
func (h *reqHead) frame(text string, spans []fieldSpan, strict bool) error {
	if strict {
		if err := requestFraming(text, spans, h.major, h.minor); err != nil {
			return err
		}
	}
	var f framing
	if err := f.frame(text, spans, h.major, h.minor, false, false); err != nil {
		return err
	}
	if f.hosts > 1 {
		return malformed("too many Host headers")
	}
	h.host, h.close, h.trailer, h.fields = f.host, f.close, f.trailer, f.fields
	if h.url.Host != "" {
		h.host = h.url.Host
	}
	switch {
	case f.chunked:
		h.contentLength = -1
	case f.hasCL:
		h.contentLength = f.contentLength
	}
	return nil
}

// requestFraming refuses the request framings Envoy's HTTP/1 codec refuses
// (docs/dataplane.md, F1–F3), which net/http's rules let through:
// Content-Length together with Transfer-Encoding, Content-Length more than
// once, and Transfer-Encoding in an HTTP/1.0 request.
func requestFraming(text string, spans []fieldSpan, major, minor int) error {
	cls, tes := 0, 0
	for _, sp := range spans {
		switch text[sp.k0:sp.k1] {
		case "content-length":
			cls++
		case "transfer-encoding":
			tes++
		}
	}
	switch {
	case cls > 0 && tes > 0:
		// F1: RFC 9112 §6.3 (3) lets a server drop Content-Length; Envoy
		// refuses the request unless http_protocol_options.allow_chunked_length.
		return refused("Content-Length with Transfer-Encoding")
	case cls > 1:
		// F2: RFC 9112 §6.3 (5); Envoy's parser refuses any repeated
		// Content-Length (disallow_multiple_content_length).
		return refused("multiple Content-Length fields")
	case tes > 0 && major == 1 && minor == 0:
		// F3: RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding has
		// faulty framing.
		return refused("Transfer-Encoding in an HTTP/1.0 request")
	}
	return nil
}

// declaredTrailer is net/http's fixTrailer for a chunked body.
func declaredTrailer(values []string) (http.Header, error) {
	t := http.Header{}
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			f = textproto.TrimString(f)
			if f == "" {
				continue
			}
			k := http.CanonicalHeaderKey(f)
			switch k {
			case "Transfer-Encoding", "Trailer", "Content-Length":
				return nil, malformed("bad trailer key %q", k)
			}
			t[k] = nil
		}
	}
	if len(t) == 0 {
		return nil, nil
	}
	return t, nil
}

// readLine appends one line to p.buf without its line end, as net/textproto
// reads it.
func (p *headParser) readLine(br *bufio.Reader) error {
	if p.strict {
		return p.readCRLFLine(br)
	}
	for {
		l, more, err := br.ReadLine()
		if err != nil {
			return err
		}
		p.buf = append(p.buf, l...)
		if !more {
			return nil
		}
	}
}

// readCRLFLine is readLine for requests: the line must end with CRLF (F4:
// RFC 9112 §2.2 lets a recipient accept a bare LF; a server in front of
// which another proxy frames differently must not), and the head must stay
// within maxBytes (L1: max_request_headers_kb).
func (p *headParser) readCRLFLine(br *bufio.Reader) error {
	s := len(p.buf)
	for {
		l, err := br.ReadSlice('\n')
		p.buf = append(p.buf, l...)
		p.n += len(l)
		if p.maxBytes > 0 && p.n > p.maxBytes {
			return errHeadersTooLarge
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(p.buf) == s && p.n == 0 {
				return err // nothing of a request: io.EOF
			}
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		break
	}
	end := len(p.buf)
	if end-s < 2 || p.buf[end-2] != '\r' {
		return refused("line ends with a bare LF")
	}
	p.buf = p.buf[:end-2]
	return nil
}

// readField appends one field line, with its continuation lines folded in,
// to p.buf exactly as net/textproto's readContinuedLineSlice does (trimmed,
// each continuation after one space); nothing for the blank line.
func (p *headParser) readField(br *bufio.Reader) error {
	s := len(p.buf)
	if err := p.readLine(br); err != nil {
		return err
	}
	if len(p.buf) == s {
		return nil
	}
	if bytes.IndexByte(p.buf[s:], ':') < 0 {
		return malformed("header line without a colon")
	}
	p.trimFrom(s)
	if p.strict {
		// F5: obs-fold. RFC 9112 §5.2 lets a server refuse it or unfold
		// it; refusing cannot disagree with a proxy in front.
		if b, err := br.Peek(1); err == nil && (b[0] == ' ' || b[0] == '\t') {
			return refused("obs-fold")
		}
		return nil
	}
	if br.Buffered() > 1 {
		if b, _ := br.Peek(2); isASCIILetter(b[0]) || b[0] == '\n' || b[0] == '\r' && b[1] == '\n' {
			return nil // the common case: the next line is no continuation
		}
	}
	for skipSpace(br) > 0 {
		p.buf = append(p.buf, ' ')
		c := len(p.buf)
		if err := p.readLine(br); err != nil {
			p.buf = p.buf[:c]
			break
		}
		p.trimFrom(c)
	}
	return nil
}

// trimFrom trims spaces and tabs around p.buf[s:].
func (p *headParser) trimFrom(s int) {
	t := p.buf[s:]
	i := 0
	for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
		i++
	}
	n := len(t)
	for n > i && (t[n-1] == ' ' || t[n-1] == '\t') {
		n--
	}
	m := copy(p.buf[s:], t[i:n])
	p.buf = p.buf[:s+m]
}

func skipSpace(br *bufio.Reader) int {
	n := 0
	for {
		c, err := br.ReadByte()
		if err != nil {
			return n
		}
		if c != ' ' && c != '\t' {
			_ = br.UnreadByte()
			return n
		}
		n++
	}
}

func isASCIILetter(b byte) bool {
	b |= 0x20
	return 'a' <= b && b <= 'z'
}

// validValueByte is net/textproto's test for a header value byte: VCHAR,
// SP, HTAB or obs-text.
func validValueByte(c byte) bool {
	return c >= 0x80 || c >= 0x20 && c != 0x7f || c == '\t'
}

// request makes the *http.Request the handler gets, with context ctx.
// Header is nil: the fields travel beside it, in the response writer.
func (h *reqHead) request(ctx context.Context, br *bufio.Reader) *http.Request {
	r := (&http.Request{
		Method:        h.method,
		URL:           &h.url,
		Proto:         h.proto,
		ProtoMajor:    h.major,
		ProtoMinor:    h.minor,
		ContentLength: h.contentLength,
		Close:         h.close,
		Host:          h.host,
		RequestURI:    h.target,
		Trailer:       h.trailer,
		Body:          http.NoBody,
	}).WithContext(ctx)
	switch {
	case h.contentLength < 0:
		r.TransferEncoding = []string{"chunked"}
		r.Body = &chunkedBody{br: br, cr: httputil.NewChunkedReader(br), trailer: &r.Trailer}
	case h.contentLength > 0:
		r.Body = &fixedBody{br: br, n: h.contentLength}
	}
	return r
}

// fixedBody is a request body of known length.
type fixedBody struct {
	br *bufio.Reader
	n  int64
}

func (b *fixedBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.br.Read(p)
	b.n -= int64(n)
	switch {
	case b.n == 0:
		err = io.EOF
	case errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// Close does nothing: the server drains or drops what is left.
func (b *fixedBody) Close() error { return nil }

// chunkedBody is a chunked body; its trailers go into *trailer when it
// ends (the message's Trailer), as with net/http. Its chunk reader refuses
// a chunk size that is not hexadecimal or above 2^63 and chunk data not
// followed by CRLF (F6: RFC 9112 §7.1, Envoy's HPE_INVALID_CHUNK_SIZE); the
// error ends the request with a 400 and the connection (F7).
type chunkedBody struct {
	br      *bufio.Reader
	cr      io.Reader
	trailer *http.Header
	done    bool
	err     error
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, b.err
	}
	n, err := b.cr.Read(p)
	if errors.Is(err, io.EOF) {
		b.done, b.err = true, io.EOF
		if terr := b.readTrailer(); terr != nil {
			b.err = terr
		}
		return n, b.err
	}
	if err != nil {
		b.done, b.err = true, err
	}
	return n, err
}

// readTrailer is net/http's body.readTrailer: a bare CRLF, or a trailer
// section that must end within the read buffer.
func (b *chunkedBody) readTrailer() error {
	buf, err := b.br.Peek(2)
	if bytes.Equal(buf, []byte("\r\n")) {
		_, _ = b.br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return io.ErrUnexpectedEOF
	}
	if err != nil {
		return err
	}
	if !upcomingDoubleCRLF(b.br) {
		return errors.New("edge: suspiciously long trailer after chunked body")
	}
	hdr, err := textproto.NewReader(b.br).ReadMIMEHeader()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	if *b.trailer == nil {
		*b.trailer = http.Header(hdr)
	} else {
		for k, vv := range hdr {
			(*b.trailer)[k] = vv
		}
	}
	return nil
}

// upcomingDoubleCRLF peeks up to the read buffer's size for the end of a
// header section.
func upcomingDoubleCRLF(br *bufio.Reader) bool {
	for peekSize := 4; ; peekSize++ {
		buf, err := br.Peek(peekSize)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func (b *chunkedBody) Close() error { return nil }

// Expect field verdicts.
const (
	expectNone     = iota // no Expect field
	expectContinue        // one "100-continue": removed from the fields
	expectInvalid         // anything else: 417
)

// expect checks the Expect fields as net/http's server does and removes a
// valid one.
func (h *reqHead) expect() int {
	at, n := -1, 0
	for i, f := range h.fields {
		if f.Key == "expect" {
			at, n = i, n+1
		}
	}
	switch {
	case n == 0:
		return expectNone
	case n > 1 || !strings.EqualFold(h.fields[at].Value, "100-continue"):
		return expectInvalid
	}
	h.fields = slices.Delete(h.fields, at, at+1)
	return expectContinue
}

// respHead is a parsed response head.
type respHead struct {
	framing
	status     int
	statusText string // "200 OK"
	proto      string
	major      int
	minor      int
	bodyLen    int64 // bytes of body to read; -1: chunked or up to the end of the connection
	length     int64 // Response.ContentLength
}

// readResponse reads a response head to a request with the given method,
// with the checks and framing of net/http's ReadResponse (its differential
// test says so); the fields are lower-cased and in order, as for requests.
func (p *headParser) readResponse(br *bufio.Reader, method string) (*respHead, error) {
	h, err := p.readResponseHead(br, method)
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return h, err
}

func (p *headParser) readResponseHead(br *bufio.Reader, method string) (*respHead, error) {
	p.reset()
	if err := p.readLine(br); err != nil {
		return nil, err
	}
	line := string(p.buf)
	proto, status, ok := strings.Cut(line, " ")
	if !ok {
		return nil, malformed("malformed HTTP response %q", line)
	}
	h := &respHead{proto: proto, statusText: strings.TrimLeft(status, " ")}
	code, _, _ := strings.Cut(h.statusText, " ")
	if len(code) != 3 {
		return nil, malformed("malformed HTTP status code %q", code)
	}
	n, err := strconv.Atoi(code)
	if err != nil || n < 0 {
		return nil, malformed("malformed HTTP status code %q", code)
	}
	h.status = n
	if h.major, h.minor, ok = http.ParseHTTPVersion(proto); !ok {
		return nil, malformed("malformed HTTP version %q", proto)
	}
	if err := p.readFields(br); err != nil {
		return nil, err
	}
	noBody := method == http.MethodHead || n/100 == 1 || n == http.StatusNoContent || n == http.StatusNotModified
	if err := h.frame(string(p.buf), p.spans, h.major, h.minor, true, noBody); err != nil {
		return nil, err
	}
	switch {
	case noBody:
		h.bodyLen, h.length = 0, 0
		if method == http.MethodHead {
			h.length = -1
			if h.hasCL {
				h.length = h.contentLength
			}
		}
	case h.chunked:
		h.bodyLen, h.length = -1, -1
	case h.hasCL:
		h.bodyLen, h.length = h.contentLength, h.contentLength
	default:
		h.bodyLen, h.length, h.close = -1, -1, true // the body ends with the connection
	}
	return h, nil
}

// response makes the *http.Response for req: Header is nil (the fields
// are h.fields), the body reads from br.
func (h *respHead) response(req *http.Request, br *bufio.Reader) *http.Response {
	r := &http.Response{
		Status:        h.statusText,
		StatusCode:    h.status,
		Proto:         h.proto,
		ProtoMajor:    h.major,
		ProtoMinor:    h.minor,
		ContentLength: h.length,
		Close:         h.close,
		Trailer:       h.trailer,
		Request:       req,
		Body:          http.NoBody,
	}
	if h.chunked {
		r.TransferEncoding = []string{"chunked"}
	}
	switch {
	case h.bodyLen > 0:
		r.Body = &fixedBody{br: br, n: h.bodyLen}
	case h.bodyLen < 0 && h.chunked:
		r.Body = &chunkedBody{br: br, cr: httputil.NewChunkedReader(br), trailer: &r.Trailer}
	case h.bodyLen < 0:
		r.Body = io.NopCloser(br)
	}
	return r
}
