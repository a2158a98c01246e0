package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Server serves the gateway listener. HTTP/1.x connections are served
// here: one goroutine per connection reads a request head (headParser:
// net/http's rules, no header map), runs the handler in the same goroutine, and writes the
// response with one write when the handler ends (a flush writes at once);
// nothing else runs per request. net/http's own server spends a goroutine
// and a read per request watching for the client to go away, plus buffers
// and state for features the edge does not use. Connections that open with
// the HTTP/2 preface (h2c with prior knowledge) go to h2, a net/http server.
type Server struct {
	handler http.HandlerFunc
	limits  Limits
	logger  *slog.Logger
	h2      *http.Server
	h2conns *connListener

	gate *gate // the burst gate (gate.go); nil: none

	mu       sync.Mutex
	lis      net.Listener
	conns    map[*serverConn]struct{}
	shutdown atomic.Bool
	wg       sync.WaitGroup
}

// Limits are the listener's bounds on what a client may send and how
// slowly (docs/dataplane.md L1–L4); zero fields take the defaults.
type Limits struct {
	// MaxHeaderBytes bounds a request head, request line included: the
	// HCM's max_request_headers_kb (default 60 KiB). Above it: 431.
	MaxHeaderBytes int
	// MaxHeaders bounds the header fields of a request: the HCM's
	// common_http_protocol_options.max_headers_count (default 100). Above
	// it: 431.
	MaxHeaders int
	// HeadersTimeout bounds the time from a request's first byte (a new
	// connection's accept) to the end of its head: the HCM's
	// request_headers_timeout. Envoy leaves it off; the built-in data
	// plane, which faces clients directly, defaults to 10 s. Expired: 408
	// and the connection closes.
	HeadersTimeout time.Duration
	// IdleTimeout closes a connection with no request in flight for this
	// long: common_http_protocol_options.idle_timeout (default 1 h).
	IdleTimeout time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxHeaderBytes = 60 << 10
	DefaultMaxHeaders     = 100
	DefaultHeadersTimeout = 10 * time.Second
	DefaultIdleTimeout    = time.Hour
)

func (l Limits) withDefaults() Limits {
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxHeaders <= 0 {
		l.MaxHeaders = DefaultMaxHeaders
	}
	if l.HeadersTimeout <= 0 {
		l.HeadersTimeout = DefaultHeadersTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	return l
}

const (
	// watchAfter: a request still running after this long has its connection
	// watched, so that a client going away cancels the request's context.
	// Watching costs a goroutine and a read per request; a completion that
	// takes seconds pays it for nothing measurable, a request queued for
	// tens of milliseconds on a busy gateway would pay it for nothing at
	// all. A stream notices a client gone at its next write anyway.
	watchAfter = time.Second
	// maxDrain is how much of a request body the handler left unread is
	// read to keep the connection; beyond it the connection is closed.
	maxDrain = 256 << 10
	// maxHeld is how much of a response body is held before the headers go
	// out: a response the handler completes within it is written at once
	// with its Content-Length.
	maxHeld = 16 << 10
)

var ErrClientGone = errors.New("edge: client closed the connection")

// NewServer returns a server of handler with the listener's limits.
func NewServer(handler http.HandlerFunc, limits Limits, logger *slog.Logger) *Server {
	limits = limits.withDefaults()
	s := &Server{handler: handler, limits: limits, logger: logger, conns: map[*serverConn]struct{}{}}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	s.h2 = &http.Server{
		Handler:           handler,
		Protocols:         &protocols,
		MaxHeaderBytes:    limits.MaxHeaderBytes,
		ReadHeaderTimeout: limits.HeadersTimeout,
		IdleTimeout:       limits.IdleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 1 << 16},
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	return s
}

// Serve accepts connections on lis until it is closed.
func (s *Server) Serve(lis net.Listener) error {
	s.mu.Lock()
	s.lis = lis
	s.h2conns = newConnListener(lis.Addr())
	s.mu.Unlock()
	if s.shutdown.Load() { // Shutdown ran before s.lis was set
		_ = lis.Close()
		return http.ErrServerClosed
	}
	h2done := make(chan struct{})
	go func() {
		defer close(h2done)
		_ = s.h2.Serve(s.h2conns)
	}()
	defer func() { <-h2done }()
	defer func() { _ = s.h2conns.Close() }()
	var delay time.Duration
	for {
		c, err := lis.Accept()
		if err != nil {
			if s.shutdown.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		sc := &serverConn{s: s, c: c}
		s.mu.Lock()
		if s.shutdown.Load() {
			s.mu.Unlock()
			_ = c.Close()
			continue
		}
		s.conns[sc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go sc.serve()
	}
}

// Shutdown stops accepting, closes idle connections, lets requests in
// flight finish (their connections close after them) and waits for them or
// for ctx; then it closes what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdown.Store(true)
	s.mu.Lock()
	if s.lis != nil {
		_ = s.lis.Close()
	}
	for sc := range s.conns {
		sc.closeIfIdle()
	}
	s.mu.Unlock()
	h2err := s.h2.Shutdown(ctx)
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return h2err
	case <-ctx.Done():
		s.mu.Lock()
		for sc := range s.conns {
			_ = sc.c.Close()
		}
		s.mu.Unlock()
		_ = s.h2.Close()
		<-done
		return ctx.Err()
	}
}

// serverConn is one downstream connection.
type serverConn struct {
	s  *Server
	c  net.Conn
	lr limitReader
	hp headParser
	// br is the read buffer while a request is read (reader, releaseReader):
	// a connection waiting for its next request, or a request whose body
	// was read waiting for the upstream, holds none when rd can wait
	// without it. It changes in the connection's goroutine, under mu.
	br *bufio.Reader
	rd readiness
	bw *bufio.Writer // while a response is written (writer, releaseWriter)
	// remote is the client's address as a request's RemoteAddr.
	remote string

	// The burst gate's slot (gate.go): held from the request's first byte
	// until the handler lets it go or returns.
	gated     atomic.Bool
	gateSince int64       // MonoNow when it took the slot
	gatePrev  *serverConn // the gate's holders, in the order they entered
	gateNext  *serverConn

	mu     sync.Mutex
	active bool // a request is being served
	closed bool
	// linger: the client may still be sending a body nobody read; close
	// gracefully so that the response reaches it.
	linger bool

	// The watch of the current request (watch.go): started once the
	// request has run for watchAfter and its body has been read, it waits
	// for the next byte or the end of the connection.
	watchT    *time.Timer
	cancel    context.CancelCauseFunc
	gone      func(error) // the handler's hook for the client going away (onGone)
	wantWatch bool
	bodyDone  bool
	watching  watchKind
	polling   bool    // registered with the poller
	preg      pollReg // the registration (watch_linux.go)
	stopping  bool
	// watchEnded is closed when the watch's goroutine (watchGoroutine), or
	// the poller's call of the hooks (watchPoller), has ended.
	watchEnded chan struct{}
}

// heldBufs are the arrays a response holds its body in before the headers
// go out (keepHeld bytes, grown by append for a larger body): taken at the
// first write and given back once written, so that a connection waiting
// holds none.
var heldBufs = sync.Pool{New: func() any { b := make([]byte, 0, keepHeld); return &b }}

const keepHeld = 2 << 10

// respWriters are the buffers responses are written through. A connection
// takes one for a response and gives it back once the response is out, so
// that a connection waiting for its next request, or for the upstream's
// response, holds none (4 KiB each: 4 MiB over 1,000 connections).
var respWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

// writer returns the connection's response buffer, taking one if needed.
func (sc *serverConn) writer() *bufio.Writer {
	if sc.bw == nil {
		sc.bw = respWriters.Get().(*bufio.Writer) //nolint:forcetypeassert // the pool holds only these
		sc.bw.Reset(sc.c)
	}
	return sc.bw
}

// releaseWriter gives the response buffer back when it holds nothing.
func (sc *serverConn) releaseWriter() {
	if sc.bw != nil && sc.bw.Buffered() == 0 {
		sc.bw.Reset(nil)
		respWriters.Put(sc.bw)
		sc.bw = nil
	}
}

// serverReaders are the buffers requests are read through (4 KiB each: 20
// MiB over 5,000 connections were they held for good).
var serverReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}

// reader returns the connection's read buffer, taking one if needed.
func (sc *serverConn) reader() *bufio.Reader {
	if sc.br == nil {
		br := serverReaders.Get().(*bufio.Reader) //nolint:forcetypeassert // the pool holds only these
		br.Reset(&sc.lr)
		sc.mu.Lock()
		sc.br = br
		sc.mu.Unlock()
	}
	return sc.br
}

// releaseReader gives the read buffer back when it holds nothing and the
// connection can be waited on without it.
func (sc *serverConn) releaseReader() {
	if sc.br == nil || sc.br.Buffered() > 0 || !sc.rd.ok() {
		return
	}
	br := sc.br
	sc.mu.Lock()
	sc.br = nil
	sc.mu.Unlock()
	br.Reset(nil)
	serverReaders.Put(br)
}

// awaitRequest waits for the first byte of the next request, or for the
// connection's end or read deadline (the error), holding no read buffer
// when nothing is buffered.
func (sc *serverConn) awaitRequest() error {
	if sc.br != nil && sc.br.Buffered() > 0 {
		return nil
	}
	sc.releaseReader()
	if err := sc.rd.wait(); !errors.Is(err, errCannotWait) {
		return err
	}
	_, err := sc.reader().Peek(1)
	return err
}

// headerLimit bounds what is read from the connection for a request's head:
// the parser counts the head itself (MaxHeaderBytes); this bounds the
// buffered read-ahead beyond it.
func (sc *serverConn) headerLimit() int64 { return int64(sc.s.limits.MaxHeaderBytes) + 4096 }

// limitReader reads from c, at most n bytes while n >= 0: it bounds the
// request headers.
type limitReader struct {
	c net.Conn
	n int64 // < 0: no limit
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeadersTooLarge
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

// h2Preface begins every HTTP/2 connection with prior knowledge.
const h2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

func (sc *serverConn) serve() {
	s := sc.s
	hijacked := false
	defer func() {
		if p := recover(); p != nil && p != http.ErrAbortHandler { //nolint:errorlint // the sentinel is compared as net/http does
			s.logger.Error("edge: handler panic", "panic", p)
		}
		sc.endPoll(hijacked)
		if !hijacked {
			if sc.linger {
				sc.lingerClose()
			}
			_ = sc.c.Close()
		}
		if sc.watchT != nil {
			sc.watchT.Stop()
		}
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
		s.wg.Done()
	}()
	sc.lr = limitReader{c: sc.c, n: sc.headerLimit()}
	sc.hp.strict, sc.hp.maxBytes, sc.hp.maxFields = true, s.limits.MaxHeaderBytes, s.limits.MaxHeaders
	sc.rd.init(sc.c)
	defer func() {
		if !hijacked {
			sc.releaseReader()
		}
	}()
	defer sc.leaveGate()
	if !sc.idle() {
		return
	}
	_ = sc.c.SetReadDeadline(time.Now().Add(s.limits.HeadersTimeout))
	if sc.closing() { // closeIfIdle's deadline was overwritten
		return
	}
	if sc.awaitRequest() != nil {
		return
	}
	sc.enterGate()
	if p, err := sc.reader().Peek(3); err == nil && string(p) == "PRI" {
		if p, err := sc.br.Peek(len(h2Preface)); err == nil && string(p) == h2Preface {
			_ = sc.c.SetReadDeadline(time.Time{})
			if s.h2conns.deliver(&bufferedConn{Conn: sc.c, r: sc.br}) {
				hijacked = true
			}
			return
		}
	}
	for {
		if hijacked = sc.serveOne(); hijacked {
			return
		}
		if sc.closing() || !sc.idle() {
			return
		}
		sc.lr.n = sc.headerLimit()
		_ = sc.c.SetReadDeadline(time.Now().Add(s.limits.IdleTimeout))
		if sc.closing() {
			return
		}
		if sc.awaitRequest() != nil {
			return
		}
		sc.enterGate()
		_ = sc.c.SetReadDeadline(time.Now().Add(s.limits.HeadersTimeout))
	}
}

// idle marks the connection idle (between requests); false: it is closing.
func (sc *serverConn) idle() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.active = false
	return !sc.closed && !sc.s.shutdown.Load()
}

func (sc *serverConn) closeIfIdle() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.closed = true
	if !sc.active {
		_ = sc.c.SetReadDeadline(aLongTimeAgo)
	}
}

func (sc *serverConn) closing() bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.closed
}

// serveOne reads and serves one request; it reports whether the handler
// took the connection (Hijack). The connection is closing when it returns
// with sc.closed set.
func (sc *serverConn) serveOne() (hijacked bool) {
	head, err := sc.hp.read(sc.reader())
	sc.hp.release()
	sc.lr.n = -1
	if err != nil {
		var te *teError
		switch {
		case errors.Is(err, errHeadersTooLarge), errors.Is(err, errTooManyHeaders):
			// L1, L2: before any handler, so before the processor.
			sc.fail(http.StatusRequestHeaderFieldsTooLarge, "431 Request Header Fields Too Large")
		case errors.Is(err, os.ErrDeadlineExceeded) && sc.hp.n > 0:
			// L3: request_headers_timeout, Envoy's 408.
			sc.fail(http.StatusRequestTimeout, "request headers timeout")
		case errors.Is(err, io.EOF), isNetError(err):
		case errors.As(err, &te):
			sc.fail(http.StatusNotImplemented, "Unsupported transfer encoding")
		default:
			sc.fail(http.StatusBadRequest, "400 Bad Request")
		}
		sc.markClosed()
		return false
	}
	_ = sc.c.SetReadDeadline(time.Time{})
	sc.mu.Lock()
	if sc.closed {
		sc.mu.Unlock()
		return false
	}
	sc.active = true
	sc.mu.Unlock()

	if msg := head.check(); msg != "" {
		sc.fail(http.StatusBadRequest, "400 Bad Request: "+msg)
		sc.markClosed()
		return false
	}
	// The request's context ends with the request or the client: it has no
	// parent but the connection, which is not a context.
	ctx, cancel := context.WithCancelCause(context.Background()) //nolint:contextcheck // see above
	req := head.request(ctx, sc.br)
	var expect *continueReader
	if req.ProtoAtLeast(1, 1) {
		switch e := head.expect(); {
		case e == expectNone:
		case e == expectInvalid:
			cancel(nil)
			sc.fail(http.StatusExpectationFailed, "417 Expectation Failed")
			sc.markClosed()
			return false
		case req.ContentLength != 0:
			expect = &continueReader{ReadCloser: req.Body, sc: sc}
			req.Body = expect
		}
	}
	if sc.remote == "" {
		sc.remote = sc.c.RemoteAddr().String() // once per connection
	}
	req.RemoteAddr = sc.remote
	if req.ContentLength == 0 {
		sc.releaseReader() // until the next request
	}
	sc.startWatch(cancel, req.ContentLength == 0)
	w := getResponse(sc, req, head.fields, expect)
	var wb *watchedBody
	if req.ContentLength != 0 {
		wb = &w.body
		req.Body = wb
	}
	sc.s.handler(w, req)
	sc.leaveGate()
	if w.hijacked {
		sc.stopWatch()
		cancel(nil)
		return true
	}
	defer putResponse(w)
	if wb != nil && wb.broken {
		// F7: the body's framing broke (a bad chunk, data cut short): the
		// connection cannot find the next request, so it ends, and a
		// handler that gave up without answering gets Envoy's 400, never
		// a default 200.
		sc.stopWatch()
		cancel(nil)
		if !w.wroteHeader {
			sc.releaseWriter()
			sc.fail(http.StatusBadRequest, "400 Bad Request: malformed body")
			sc.markClosed()
			return false
		}
		w.closeAfter, sc.linger = true, true
	}
	if wb != nil && !wb.done && (req.ContentLength < 0 || req.ContentLength > maxDrain) {
		// The handler answered without reading a body too large to skip:
		// the connection ends after this response, which says so.
		w.closeAfter, sc.linger = true, true
	}
	if err := w.finish(); err != nil {
		sc.markClosed()
	}
	sc.releaseWriter()
	sc.stopWatch()
	cancel(nil)
	switch {
	case expect != nil && !expect.sent:
		// The client waits for "100 Continue" before it sends the body;
		// after the final response it must not come (it would read as the
		// next Response), so the connection ends instead (the response
		// said so when its headers were written then).
		sc.markClosed()
		sc.linger = true
	case w.closeAfter || req.Close:
		sc.markClosed()
	case wb != nil && !wb.done && !sc.drain(wb.ReadCloser):
		sc.markClosed() // the unread body is too large to skip, or broken
		sc.linger = true
	}
	return false
}

// drain reads what the handler left of a request body, so that the
// connection can carry the next request; false when it could not.
func (sc *serverConn) drain(body io.Reader) bool {
	_ = sc.c.SetReadDeadline(time.Now().Add(time.Second))
	defer func() { _ = sc.c.SetReadDeadline(time.Time{}) }()
	n, err := io.CopyN(io.Discard, body, maxDrain+1)
	return n <= maxDrain && errors.Is(err, io.EOF)
}

func isNetError(err error) bool {
	var ne net.Error
	return errors.As(err, &ne)
}

func (sc *serverConn) markClosed() {
	sc.mu.Lock()
	sc.closed = true
	sc.mu.Unlock()
}

// fail writes a bare error response on a connection that will close.
func (sc *serverConn) fail(status int, text string) {
	_ = sc.c.SetWriteDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintf(sc.c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(text), text); err == nil {
		sc.linger = true
	}
}

// lingerClose half-closes the connection and reads what the client still
// sends for a moment, so that unread request bytes do not turn the close
// into a reset that destroys the response before the client reads it (as
// net/http's server does).
func (sc *serverConn) lingerClose() {
	if cw, ok := sc.c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		_ = sc.c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.CopyN(io.Discard, sc.c, 4<<20)
	}
}

// watchedBody tells the watch when the request body has been read, and
// remembers whether it ended broken.
type watchedBody struct {
	io.ReadCloser
	sc     *serverConn
	done   bool
	broken bool // ended with an error other than io.EOF
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.done {
		b.done = true
		b.broken = !errors.Is(err, io.EOF)
		b.sc.releaseReader() // until the next request
		b.sc.bodyRead()
	}
	return n, err
}

// continueReader answers "Expect: 100-continue" when the handler first
// reads the body.
type continueReader struct {
	io.ReadCloser
	sc   *serverConn
	sent bool
}

func (r *continueReader) Read(p []byte) (int, error) {
	if !r.sent {
		r.sent = true
		if _, err := r.sc.c.Write([]byte("HTTP/1.1 100 Continue\r\n\r\n")); err != nil {
			return 0, err
		}
	}
	return r.ReadCloser.Read(p)
}

// responses are the free Responses: a request takes one and gives it back
// once it was served (not when the handler hijacked the connection), so
// that neither a request nor an idle connection costs one of its own.
var responses = sync.Pool{New: func() any { return new(Response) }}

// getResponse takes the Response of req, whose body (if any) it watches.
// Out of line: the Response is built in its frame, which a request waiting
// for its upstream does not keep on its stack.
//
//go:noinline
func getResponse(sc *serverConn, req *http.Request, fields Fields, expect *continueReader) *Response {
	w := responses.Get().(*Response) //nolint:forcetypeassert // the pool holds only these
	*w = Response{sc: sc, req: req, fields: fields, contentLength: -1, expect: expect}
	if req.ContentLength != 0 {
		w.body = watchedBody{ReadCloser: req.Body, sc: sc}
	}
	return w
}

// putResponse gives w back, holding nothing of its request.
func putResponse(w *Response) {
	*w = Response{}
	responses.Put(w)
}

// Response is the http.ResponseWriter of one request. The handler must
// not touch it (nor its request's body) after it returned: it is reused.
type Response struct {
	sc  *serverConn
	req *http.Request
	// body is the request's body as the handler reads it (a request with
	// a body): it tells the watch when the body has been read.
	body watchedBody
	// fields are the request's header fields (req.Header is nil), names
	// lower-cased, in order; Expect removed.
	fields Fields
	header http.Header
	// out are the response headers when set with setHeaders (the edge's
	// path): written in order, names as given (lower-case, as Envoy's codec
	// writes them); header then holds only trailers.
	out   Fields
	badCL bool // out's content-length is not a length: not written

	status        int
	wroteHeader   bool
	headerSent    bool
	held          []byte  // body written before the headers went out
	heldBuf       *[]byte // held's first array, from heldBufs
	chunked       bool
	bodyAllowed   bool
	head          bool  // a HEAD request: body writes are dropped
	contentLength int64 // declared, -1 when unknown
	written       int64
	closeAfter    bool
	hijacked      bool
	expect        *continueReader // nil unless the request expects 100-continue
	err           error
}

var (
	_ http.ResponseWriter = (*Response)(nil)
	_ http.Flusher        = (*Response)(nil)
	_ http.Hijacker       = (*Response)(nil)
)

// Header is made on first use: the edge sets its headers with SetHeaders,
// and most responses have no trailers.
func (w *Response) Header() http.Header {
	if w.header == nil {
		w.header = make(http.Header)
	}
	return w.header
}

// Fields are the request's header fields (the http.Request's Header is
// nil), names lower-cased, in order; Expect removed.
func (w *Response) Fields() Fields { return w.fields }

// OnGone sets what is called, after the request's context is cancelled
// with ErrClientGone, when the client goes away during the request (nil:
// nothing). A handler that would otherwise derive a context from the
// request's, only to learn of its end, is told directly: no registration in
// the request's context. It may still be called once after OnGone(nil)
// returns.
func (w *Response) OnGone(f func(error)) { w.sc.onGone(f) }

func (w *Response) WriteHeader(code int) {
	if w.wroteHeader || w.hijacked {
		return
	}
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if code < 200 {
		return // informational responses are not forwarded
	}
	w.wroteHeader, w.status = true, code
	w.head = w.req.Method == http.MethodHead
	w.bodyAllowed = code != http.StatusNoContent && code != http.StatusNotModified && !w.head
	v := w.header.Get("Content-Length")
	if w.out != nil {
		v = w.out.Value("content-length")
	}
	if v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			w.contentLength = n
		} else {
			w.header.Del("Content-Length")
			w.badCL = true
		}
	}
}

// setHeaders sets the response headers to h (names lower-case, no
// pseudo-headers or hop-by-hop fields), to be written in that order, and
// the status; it is WriteHeader without a header map.
func (w *Response) SetHeaders(code int, h Fields) {
	if w.wroteHeader || w.hijacked {
		return
	}
	w.out = h
	w.WriteHeader(code)
}

func (w *Response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.head {
		return len(p), nil
	}
	if !w.bodyAllowed {
		return 0, http.ErrBodyNotAllowed
	}
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	w.written += int64(len(p))
	if !w.headerSent {
		if len(w.held)+len(p) <= maxHeld {
			if w.heldBuf == nil {
				w.heldBuf = heldBufs.Get().(*[]byte) //nolint:forcetypeassert // the pool holds only these
				w.held = (*w.heldBuf)[:0]
			}
			w.held = append(w.held, p...)
			return len(p), nil
		}
		w.sendHeader(false)
	}
	w.writeBody(p)
	if w.err != nil {
		return 0, w.err
	}
	return len(p), nil
}

// writeBody writes p with the response's framing.
func (w *Response) writeBody(p []byte) {
	if len(p) == 0 || w.err != nil {
		return
	}
	bw := w.sc.writer()
	if w.chunked {
		var b [20]byte
		_, _ = bw.Write(strconv.AppendInt(b[:0], int64(len(p)), 16))
		_, _ = bw.WriteString("\r\n")
		_, _ = bw.Write(p)
		_, err := bw.WriteString("\r\n")
		w.err = err
		return
	}
	_, w.err = bw.Write(p)
}

// Flush sends the headers and what is held, and flushes.
func (w *Response) Flush() { _ = w.FlushError() }

// FlushError is Flush with its error (http.ResponseController uses it).
func (w *Response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headerSent {
		w.sendHeader(false)
	}
	if w.err == nil {
		w.err = w.sc.writer().Flush()
	}
	return w.err
}

// SetReadDeadline bounds the reads of the request body
// (http.ResponseController uses it).
func (w *Response) SetReadDeadline(t time.Time) error { return w.sc.c.SetReadDeadline(t) }

func (w *Response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	w.hijacked = true
	return w.sc.c, bufio.NewReadWriter(w.sc.reader(), w.sc.writer()), nil
}

// finish completes the response after the handler returned.
func (w *Response) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headerSent {
		w.sendHeader(true)
	}
	if w.chunked && w.err == nil {
		bw := w.sc.writer()
		_, _ = bw.WriteString("0\r\n")
		for k, vs := range w.header {
			name, ok := strings.CutPrefix(k, http.TrailerPrefix)
			if !ok {
				continue
			}
			for _, v := range vs {
				WriteField(bw, http.CanonicalHeaderKey(name), v)
			}
		}
		_, w.err = bw.WriteString("\r\n")
	}
	if w.err == nil {
		w.err = w.sc.writer().Flush()
	}
	if w.err == nil && w.contentLength >= 0 && w.bodyAllowed && w.written != w.contentLength {
		// The body fell short of its Content-Length: the client must not
		// wait for the rest on a connection that goes on.
		w.closeAfter = true
	}
	return w.err
}

// sendHeader writes the status line and headers into the buffer; final
// means the handler has returned, so a held body is the whole body.
func (w *Response) sendHeader(final bool) {
	w.headerSent = true
	var (
		dropCL = w.badCL
		length string // a Content-Length to add
		te     bool   // chunked framing
		conn   string // a Connection value to set
	)
	switch {
	case !w.bodyAllowed:
		if w.status == http.StatusNoContent || w.status == http.StatusNotModified {
			dropCL = true
		}
	case w.contentLength >= 0:
	case final:
		w.contentLength = int64(len(w.held))
		dropCL, length = true, strconv.Itoa(len(w.held))
	case w.req.ProtoAtLeast(1, 1):
		w.chunked, te = true, true
	default:
		w.closeAfter = true // an HTTP/1.0 body of unknown length ends with the connection
	}
	if w.expect != nil && !w.expect.sent {
		w.closeAfter = true // the body the client holds back is not wanted
	}
	if w.req.Close || w.sc.s.shutdown.Load() || w.sc.closing() || w.closeAfter {
		w.closeAfter = true
		conn = "close"
	} else if !w.req.ProtoAtLeast(1, 1) {
		conn = "keep-alive"
	}
	bw := w.sc.writer()
	_, _ = bw.WriteString(statusLine(w.status))
	hasDate := false
	// skip reports whether a field (lower-case name) gives way to the
	// framing decided above.
	skip := func(k string) bool {
		switch k {
		case "content-length":
			return dropCL
		case "transfer-encoding":
			return te
		case "connection":
			return conn != ""
		case "date":
			hasDate = true
		}
		return false
	}
	for _, f := range w.out {
		if httpguts.ValidHeaderFieldName(f.Key) && !skip(f.Key) {
			WriteField(bw, f.Key, f.Value)
		}
	}
	for k, vs := range w.header {
		if strings.HasPrefix(k, http.TrailerPrefix) || !httpguts.ValidHeaderFieldName(k) || skip(LowerKey(k)) {
			continue
		}
		for _, v := range vs {
			WriteField(bw, k, v)
		}
	}
	// The fields added here are named like the others: lower-case after
	// setHeaders, canonical otherwise.
	add := func(canonical, lower, v string) {
		if w.out != nil {
			WriteField(bw, lower, v)
		} else {
			WriteField(bw, canonical, v)
		}
	}
	if length != "" {
		add("Content-Length", "content-length", length)
	}
	if te {
		add("Transfer-Encoding", "transfer-encoding", "chunked")
	}
	if conn != "" {
		add("Connection", "connection", conn)
	}
	if !hasDate {
		add("Date", "date", httpDate())
	}
	_, _ = bw.WriteString("\r\n")
	held := w.held
	w.held = nil
	w.writeBody(held) // copied or written: the array is free again
	if w.heldBuf != nil {
		heldBufs.Put(w.heldBuf)
		w.heldBuf = nil
	}
}

var statusLines sync.Map // int → string

func statusLine(code int) string {
	if s, ok := statusLines.Load(code); ok {
		return s.(string)
	}
	text := http.StatusText(code)
	if text == "" {
		text = "status code " + strconv.Itoa(code)
	}
	s := "HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n"
	statusLines.Store(code, s)
	return s
}

// httpDate is the Date header value, formatted once per second.
func httpDate() string {
	now := time.Now().Unix()
	if d := cachedDate.Load(); d != nil && d.unix == now {
		return d.text
	}
	d := &dateText{unix: now, text: time.Unix(now, 0).UTC().Format(http.TimeFormat)}
	cachedDate.Store(d)
	return d.text
}

type dateText struct {
	unix int64
	text string
}

var cachedDate atomic.Pointer[dateText]

// bufferedConn is a connection whose first bytes were read into r.
type bufferedConn struct {
	net.Conn
	r io.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connListener hands connections to an http.Server.
type connListener struct {
	addr   net.Addr
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// deliver hands c over; false when the listener is closed.
func (l *connListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }
