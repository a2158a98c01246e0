package edge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/tollgate-ai/tollgate/extproc/envoytest"
)

// Body reads start with a small buffer, so that thousands of idle streams
// (SSE between events) hold little memory, and switch to a large one once a
// read fills the small one; each read becomes one chunk.
const (
	smallRead = 4 << 10
	largeRead = 32 << 10
)

var (
	smallBufs = sync.Pool{New: func() any { b := make([]byte, smallRead); return &b }}
	largeBufs = sync.Pool{New: func() any { b := make([]byte, largeRead); return &b }}
)

// reader reads a body into pooled buffers.
type reader struct {
	buf   *[]byte
	large bool
	grow  bool // the last read filled the small buffer: the next uses a large one
}

func newReader() *reader { return &reader{buf: smallBufs.Get().(*[]byte)} }

// read reads once into the reader's buffer. The chunk is valid until the
// next read or close: the filter copies what it keeps (envoytest.Stream
// does, and the edge writes or appends a result's body before reading on).
func (rd *reader) read(r io.Reader) ([]byte, error) {
	if rd.grow {
		smallBufs.Put(rd.buf)
		rd.buf, rd.large, rd.grow = largeBufs.Get().(*[]byte), true, false
	}
	n, err := r.Read(*rd.buf)
	rd.grow = n == len(*rd.buf) && !rd.large
	return (*rd.buf)[:n], err
}

func (rd *reader) close() {
	if rd.large {
		largeBufs.Put(rd.buf)
	} else {
		smallBufs.Put(rd.buf)
	}
}

// Causes of an upstream cancellation.
var (
	errIdleTimeout  = errors.New("edge: stream idle timeout")
	errRouteTimeout = errors.New("edge: upstream request timeout")
	errPerTry       = errors.New("edge: per-try timeout")
	errAborted      = errors.New("edge: downstream request ended")
)

// Envoy's local reply bodies.
const (
	bodyConnectFailure = "upstream connect error or disconnect/reset before headers. reset reason: "
	bodyTimeout        = "upstream request timeout"
	bodyIdleTimeout    = "stream timeout"
)

// exchange is one HTTP request through the filter and the router.
type exchange struct {
	e   *Edge
	st  *state
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context // the downstream request's
	f   filter

	first      *route
	fwd        envoytest.Headers // request headers released by the filter
	body       []byte            // request body released before routing
	clearRoute bool
	rerouted   *route // the match after clearRoute, once rematched
	rematched  bool

	// Streamed request bodies: the upstream request runs while the body is
	// still being filtered.
	pipe      *io.PipeWriter
	async     chan *http.Response
	asyncDone bool

	// The upstream request's context: cancelled (cancelUp) by the timers,
	// by a local reply, by the client going away and when the exchange
	// ends; not a child of ctx, whose cancellation reaches it through the
	// server's onGone hook, which costs no registration in ctx.
	upCtx      context.Context
	upCancel   context.CancelCauseFunc
	upAbort    upstreamAbort              // the upstream connection in use, cut off by cancelUp
	goneHook   *serverConn                // the HTTP/1.1 connection whose onGone reaches cancelUp
	stopGone   func() bool                // else the link from ctx, an AfterFunc
	idle       time.Duration              // stream idle timeout, 0 for none
	deadline   int64                      // monoNow when the route timeout fires, 0 for none
	timer      *time.Timer                // one timer for both
	timerP     atomic.Pointer[time.Timer] // timer, for timerCheck's goroutine
	lastActive atomic.Int64               // monoNow at the last stream activity
	// attemptDeadline is monoNow when the running attempt's per-try
	// timeout fires, 0 when none runs.
	attemptDeadline atomic.Int64
	release         func()

	sentHeaders bool // response headers went downstream
	flushEach   bool // flush every write downstream: a stream (SSE, or a body of unknown length)
	rc          *http.ResponseController
}

func (e *Edge) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if e.health != nil && e.serveHealth(w, r) {
		return
	}
	x := &exchange{e: e, st: e.state.Load(), w: w, r: r, ctx: r.Context(), rc: http.NewResponseController(w)}
	x.upCtx, x.upCancel = context.WithCancelCause(context.WithoutCancel(x.ctx))
	if rw, ok := w.(*response); ok {
		x.goneHook = rw.sc
		x.goneHook.onGone(x.cancelUp)
	} else {
		x.stopGone = context.AfterFunc(x.ctx, func() { x.cancelUp(context.Cause(x.ctx)) }) //nolint:contextcheck // x.ctx is r.Context()
	}
	if x.ctx.Err() != nil { // gone before the hook was set
		x.cancelUp(context.Cause(x.ctx)) //nolint:contextcheck // x.ctx is r.Context()
	}
	defer x.finish()
	x.run() //nolint:contextcheck // the exchange carries the request context
}

// cancelUp ends the upstream request with cause: its context, and the
// connection it is using.
func (x *exchange) cancelUp(cause error) {
	x.upCancel(cause)
	x.upAbort.fire()
}

func (x *exchange) finish() {
	if x.goneHook != nil {
		x.goneHook.onGone(nil)
	} else {
		x.stopGone()
	}
	x.cancelUp(nil)
	if x.async != nil && !x.asyncDone {
		// The request ended while its upstream request was still running:
		// wait for it (it sees the cancellation) before touching its state.
		_ = x.pipe.CloseWithError(errAborted)
		if resp := <-x.async; resp != nil {
			_ = resp.Body.Close()
		}
	}
	if x.timer != nil {
		x.timer.Stop()
	}
	if x.f != nil {
		x.f.Close()
	}
	if x.release != nil {
		x.release()
	}
}

func (x *exchange) run() {
	h := downstreamHeaders(x.w, x.r)
	noBody := x.r.Body == nil || x.r.Body == http.NoBody || x.r.ContentLength == 0
	x.first = x.st.routes.match(h)
	if x.first != nil && x.first.filter != nil {
		// Every header list the exchange passes is built for the call.
		x.f = x.first.filter.Start(x.ctx, envoytest.WithOwnedHeaders())
	} else {
		x.f = passthrough{}
	}
	res, err := x.f.RequestHeaders(h, noBody)
	if !x.onRequest(res, err, noBody) {
		return
	}
	if !noBody && !x.requestBody() {
		return
	}
	var resp *http.Response
	if x.async != nil {
		_ = x.pipe.Close()
		resp = <-x.async
		x.asyncDone = true
	} else {
		if x.fwd == nil {
			// The filter ended the request without releasing the headers:
			// only a caller bug can get here.
			x.writeLocal(http.StatusInternalServerError, nil, nil)
			return
		}
		resp = x.roundTrip(x.route(), x.body, true) //nolint:bodyclose // respond closes it
	}
	if resp == nil {
		return
	}
	x.respond(resp)
}

// requestBody feeds the downstream body to the filter, one read per chunk.
// A client that sends nothing for the stream idle timeout (the route's, else
// the listener's) gets Envoy's 408.
func (x *exchange) requestBody() bool {
	rd := newReader()
	defer rd.close()
	rt := x.first
	if x.fwd != nil {
		rt = x.route() // the headers were released, maybe with a new route
	}
	idle := x.idleTimeout(rt)
	if idle > 0 {
		defer func() { _ = x.rc.SetReadDeadline(time.Time{}) }()
	}
	remaining := x.r.ContentLength
	for {
		if idle > 0 {
			_ = x.rc.SetReadDeadline(time.Now().Add(idle))
		}
		chunk, err := rd.read(x.r.Body)
		n := len(chunk)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			x.writeLocal(http.StatusRequestTimeout, nil, []byte(bodyIdleTimeout))
			return false
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return false // the client went away or sent a broken body
		}
		if remaining > 0 {
			remaining -= int64(n)
		}
		eof := err != nil || remaining == 0
		if eof {
			if tr := trailers(x.r.Trailer); tr != nil {
				if n > 0 {
					res, err := x.f.RequestBody(chunk, false)
					if !x.onRequest(res, err, false) {
						return false
					}
				}
				res, err := x.f.RequestTrailers(tr)
				return x.onRequest(res, err, true)
			}
			res, err := x.f.RequestBody(chunk, true)
			return x.onRequest(res, err, true)
		}
		if n == 0 {
			continue
		}
		res, err := x.f.RequestBody(chunk, false)
		if !x.onRequest(res, err, false) {
			return false
		}
	}
}

// onRequest applies a request-direction result; false ends the exchange.
func (x *exchange) onRequest(res *envoytest.Result, err error, last bool) bool {
	if err != nil {
		if x.ctx.Err() != nil {
			return false // the client went away
		}
		x.e.logger.Error("edge: ext_proc client", "error", err)
		x.writeLocal(http.StatusInternalServerError, nil, nil)
		return false
	}
	if res.Reset {
		abort(x.w)
		return false
	}
	if res.LocalReply != nil {
		x.writeLocal(res.LocalReply.Status, res.LocalReply.Headers, res.LocalReply.Body)
		return false
	}
	if res.ClearRouteCache {
		x.clearRoute = true
	}
	if res.Headers != nil {
		x.fwd = res.Headers
		if !last && x.async == nil {
			x.startAsync()
		}
	}
	if len(res.Body) > 0 {
		if x.pipe != nil {
			// A failed write means the upstream request is over; the rest of
			// the body is dropped.
			_, _ = x.pipe.Write(res.Body)
		} else {
			x.body = append(x.body, res.Body...)
		}
	}
	return true
}

// startAsync starts the upstream request with a streamed body.
func (x *exchange) startAsync() {
	pr, pw := io.Pipe()
	x.pipe = pw
	x.async = make(chan *http.Response, 1)
	rt := x.route()
	go func() { x.async <- x.roundTripStream(rt, pr) }() //nolint:bodyclose // run or finish closes it
}

// route is the route of the released headers: the first match, or a new
// match when the filter cleared the route cache (R3.1).
func (x *exchange) route() *route {
	if !x.clearRoute {
		return x.first
	}
	if !x.rematched { // the released headers do not change: match once
		x.rerouted, x.rematched = x.st.routes.match(x.fwd), true
	}
	return x.rerouted
}

// idleTimeout is the stream idle timeout under rt: the route's, else the
// listener's (Envoy's HCM stream_idle_timeout).
func (x *exchange) idleTimeout(rt *route) time.Duration {
	if rt != nil && rt.idle >= 0 {
		return rt.idle
	}
	return x.st.listener.streamIdle
}

func (x *exchange) roundTripStream(rt *route, body *io.PipeReader) *http.Response {
	resp := x.roundTrip(rt, body, false)
	if resp != nil && resp.Request == nil {
		// A local reply: nobody reads the body.
		_ = body.CloseWithError(errors.New("edge: request not forwarded"))
	}
	return resp
}

// roundTrip routes and forwards the request. It returns the upstream
// response or a local reply of the router (a response with no Request), or
// nil when the client went away.
func (x *exchange) roundTrip(rt *route, body any, buffered bool) *http.Response {
	if rt == nil {
		return localResponse(http.StatusNotFound, nil, nil)
	}
	if rt.direct != nil {
		return localResponse(rt.direct.status, rt.direct.headers, rt.direct.body)
	}
	cl := x.st.clusters[rt.cluster]
	if cl == nil {
		return localResponse(http.StatusServiceUnavailable, nil, nil)
	}
	if !cl.acquire() {
		return localResponse(http.StatusServiceUnavailable, nil, []byte(bodyConnectFailure+"overflow"))
	}
	x.release = cl.release
	x.startTimers(rt)
	var (
		req  *http.Request
		wire *bytes.Buffer // the request serialised for the HTTP/1.1 fast path
		err  error
	)
	if b, ok := body.([]byte); ok && buffered && cl.h1 != nil && len(b) <= maxSerialised {
		wire = getReqBuf()
		defer putReqBuf(wire)
		if !x.wireRequest(wire, rt, cl, b) {
			return localResponse(http.StatusBadRequest, nil, nil)
		}
		req = methodRequest(x.fwd.Value(":method"))
	} else if req, err = x.upstreamRequest(rt, cl, body, buffered); err != nil {
		return localResponse(http.StatusBadRequest, nil, nil)
	}
	attempts := 1
	if rt.retryOnConn && buffered {
		attempts += rt.retries
	}
	perTryD := firstPositive(rt.perTry, rt.perTryIdle)
	for attempt := 0; ; attempt++ {
		// Every attempt runs on the request's upstream context: a per-try
		// timeout ends the request with a 504 (it is not retried), so it
		// cancels that context, from the exchange's one timer; a failed
		// attempt leaves nothing running to cancel before a retry.
		if perTryD > 0 {
			x.armAttempt(perTryD)
		}
		var resp *http.Response
		if wire != nil {
			resp, err = cl.h1.do(x.upCtx, req, wire.Bytes(), &x.upAbort)
		} else {
			resp, err = cl.transport.RoundTrip(req.WithContext(x.upCtx))
		}
		x.attemptDeadline.Store(0) // the response started, or the attempt failed
		if err == nil {
			x.touch()
			return resp
		}
		cause := context.Cause(x.upCtx)
		switch {
		case x.ctx.Err() != nil:
			return nil
		case errors.Is(cause, errPerTry), errors.Is(cause, errRouteTimeout):
			return localResponse(http.StatusGatewayTimeout, nil, []byte(bodyTimeout))
		case errors.Is(cause, errIdleTimeout):
			return localResponse(http.StatusRequestTimeout, nil, []byte(bodyIdleTimeout))
		}
		reason := "connection termination"
		if isConnectFailure(err) {
			reason = "remote connection failure"
			if attempt+1 < attempts {
				if !sleepCtx(x.upCtx, 25*time.Millisecond<<attempt) {
					return nil
				}
				if wire == nil {
					req, _ = x.upstreamRequest(rt, cl, body, buffered)
				}
				continue
			}
		}
		x.e.logger.Debug("edge: upstream request failed", "cluster", cl.name, "error", err)
		return localResponse(http.StatusServiceUnavailable, nil, []byte(bodyConnectFailure+reason))
	}
}

func firstPositive(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

func isConnectFailure(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// startTimers arms the route timeout and the stream idle timeout, on one
// timer (which also keeps the per-try timeouts, armAttempt): it fires when
// the nearest is due, and cancels or re-arms.
func (x *exchange) startTimers(rt *route) {
	if x.timer != nil {
		return
	}
	now := monoNow()
	if rt.timeout > 0 {
		x.deadline = now + int64(rt.timeout)
	}
	x.idle = x.idleTimeout(rt)
	if x.deadline == 0 && x.idle <= 0 {
		return
	}
	x.lastActive.Store(now)
	x.timer = time.AfterFunc(time.Duration(math.MaxInt64), x.timerCheck)
	x.timerP.Store(x.timer) // before the timer can fire
	x.timer.Reset(x.due(now))
}

// armAttempt starts an upstream attempt's per-try timeout of d.
func (x *exchange) armAttempt(d time.Duration) {
	now := monoNow()
	x.attemptDeadline.Store(now + int64(d))
	if x.timer == nil {
		x.timer = time.AfterFunc(time.Duration(math.MaxInt64), x.timerCheck)
		x.timerP.Store(x.timer) // before the timer can fire
	}
	x.timer.Reset(x.due(now))
}

// touch records stream activity for the idle timeout.
// Activity is a timestamp, not a timer reset per chunk: the timer, when it
// fires, re-arms itself for what is left of the idle time.
func (x *exchange) touch() {
	if x.idle > 0 {
		x.lastActive.Store(monoNow())
	}
}

// due is how long from now until the route timeout or the idle timeout,
// whichever is nearer, is due; <= 0 when one is.
func (x *exchange) due(now int64) time.Duration {
	d := time.Duration(math.MaxInt64)
	if x.deadline > 0 {
		d = time.Duration(x.deadline - now)
	}
	if x.idle > 0 {
		d = min(d, x.idle-time.Duration(now-x.lastActive.Load()))
	}
	if a := x.attemptDeadline.Load(); a > 0 {
		d = min(d, time.Duration(a-now))
	}
	return d
}

// timerCheck runs when the timer fires: the route timeout wins over the
// idle timeout when both are due.
func (x *exchange) timerCheck() {
	now := monoNow()
	switch {
	case x.deadline > 0 && now >= x.deadline:
		x.cancelUp(errRouteTimeout)
	case x.attemptDeadline.Load() > 0 && now >= x.attemptDeadline.Load():
		x.cancelUp(errPerTry)
	case x.idle > 0 && x.idle <= time.Duration(now-x.lastActive.Load()):
		x.cancelUp(errIdleTimeout)
	default:
		x.timerP.Load().Reset(x.due(now))
	}
}

// monoStart anchors monoNow.
var monoStart = time.Now()

// monoNow is monotonic nanoseconds since the process started.
func monoNow() int64 { return int64(time.Since(monoStart)) }

// wireRequest writes the HTTP/1.1 request sent to cl from the released
// headers and the whole body b into buf, with lower-case header names as
// Envoy sends them. False when :path is not a request target.
func (x *exchange) wireRequest(buf *bytes.Buffer, rt *route, cl *cluster, b []byte) bool {
	method, path := x.fwd.Value(":method"), x.fwd.Value(":path")
	if !validTarget(path) || !httpguts.ValidHeaderFieldName(method) {
		return false
	}
	buf.WriteString(method)
	buf.WriteByte(' ')
	buf.WriteString(path)
	buf.WriteString(" HTTP/1.1\r\n")
	writeField(buf, "host", x.upstreamHost(rt, cl))
	for _, kv := range x.fwd {
		if forwarded(kv.Key) && httpguts.ValidHeaderFieldName(kv.Key) {
			writeField(buf, kv.Key, kv.Value)
		}
	}
	if len(b) > 0 || (method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions && method != http.MethodDelete) {
		var n [20]byte
		buf.WriteString("content-length: ")
		buf.Write(strconv.AppendInt(n[:0], int64(len(b)), 10))
		buf.WriteString("\r\n")
	}
	buf.WriteString("\r\n")
	buf.Write(b)
	return true
}

// upstreamHost is the Host of the upstream request: the route's
// host_rewrite_literal, else the :authority the filter released, else the
// cluster's address.
func (x *exchange) upstreamHost(rt *route, cl *cluster) string {
	if rt.hostRewrite != "" {
		return rt.hostRewrite
	}
	if a := x.fwd.Value(":authority"); a != "" {
		return a
	}
	return cl.urlHost
}

// forwarded reports whether a released header goes upstream as it is: the
// pseudo-headers, hop-by-hop headers, host and content-length are written
// by whoever writes the request, and Expect was answered downstream.
func forwarded(k string) bool {
	return !strings.HasPrefix(k, ":") && !hopByHop(k) && k != "host" && k != "content-length" && k != "expect"
}

// validTarget reports whether p is an origin-form request target (or "*").
func validTarget(p string) bool {
	if p == "*" {
		return true
	}
	if p == "" || p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// fieldWriter is what header fields are written to: a bytes.Buffer or a
// bufio.Writer.
type fieldWriter interface {
	io.StringWriter
	io.ByteWriter
}

// writeField writes "k: v\r\n" with any CR or LF in v turned into a space, as
// net/http does.
func writeField(w fieldWriter, k, v string) {
	_, _ = w.WriteString(k)
	_, _ = w.WriteString(": ")
	if !strings.ContainsAny(v, "\r\n") {
		_, _ = w.WriteString(v)
	} else {
		for i := 0; i < len(v); i++ {
			if c := v[i]; c == '\r' || c == '\n' {
				_ = w.WriteByte(' ')
			} else {
				_ = w.WriteByte(c)
			}
		}
	}
	_, _ = w.WriteString("\r\n")
}

// upstreamRequest builds the request sent to cl from the released headers.
func (x *exchange) upstreamRequest(rt *route, cl *cluster, body any, buffered bool) (*http.Request, error) {
	u, err := url.ParseRequestURI(x.fwd.Value(":path"))
	if err != nil {
		return nil, err
	}
	u.Scheme, u.Host = cl.scheme, cl.urlHost
	req := &http.Request{
		Method: x.fwd.Value(":method"),
		URL:    u,
		Header: make(http.Header, len(x.fwd)),
		Host:   x.upstreamHost(rt, cl),
	}
	vals := make([]string, len(x.fwd)) // backing for the one-value lists
	for i, kv := range x.fwd {
		if !forwarded(kv.Key) {
			continue
		}
		addHeader(req.Header, http.CanonicalHeaderKey(kv.Key), kv.Value, vals[i:i+1:i+1])
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // Go would add its own
	}
	if buffered {
		b := body.([]byte)
		req.ContentLength = int64(len(b))
		if len(b) == 0 {
			req.Body = http.NoBody
		} else {
			req.Body = io.NopCloser(bytes.NewReader(b))
		}
		return req, nil
	}
	req.Body = body.(*io.PipeReader)
	req.ContentLength = -1
	if v, ok := x.fwd.Get("content-length"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			req.ContentLength = n
		}
	}
	return req, nil
}

// respond passes the response through the filter and downstream.
func (x *exchange) respond(resp *http.Response) {
	defer func() { _ = resp.Body.Close() }()
	// The HTTP/1 client hands the fields over in order (its Header is nil);
	// net/http's transport fills Header.
	var fields envoytest.Headers
	if b, ok := resp.Body.(*h1Body); ok {
		fields = b.fields
	}
	// Room for :status, a content-length and the headers a processor adds
	// (the stream keeps and extends this list: WithOwnedHeaders).
	h := make(envoytest.Headers, 0, len(fields)+len(resp.Header)+8)
	h = append(h, envoytest.Header{Key: ":status", Value: strconv.Itoa(resp.StatusCode)})
	for _, f := range fields {
		if !hopByHop(f.Key) {
			h = append(h, f)
		}
	}
	for k, vs := range resp.Header {
		lk := lowerKey(k)
		if hopByHop(lk) {
			continue
		}
		for _, v := range vs {
			h = append(h, envoytest.Header{Key: lk, Value: v})
		}
	}
	if resp.ContentLength >= 0 && !h.Has("content-length") && resp.Request != nil {
		h = append(h, envoytest.Header{Key: "content-length", Value: strconv.FormatInt(resp.ContentLength, 10)})
	}
	noBody := resp.Body == http.NoBody || resp.ContentLength == 0 || x.fwd.Value(":method") == http.MethodHead
	// A body of known length that is not an event stream goes out when the
	// exchange ends (or whenever net/http's buffer fills): flushing the
	// headers and each read on their own would cost a write per piece.
	x.flushEach = resp.ContentLength < 0 || isEventStream(h.Value("content-type"))
	res, err := x.f.ResponseHeaders(h, noBody)
	if !x.onResponse(res, err, !noBody) || noBody {
		return
	}
	rd := newReader()
	defer rd.close()
	remaining := resp.ContentLength
	for {
		chunk, rerr := rd.read(resp.Body)
		n := len(chunk)
		x.touch()
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			x.upstreamFailed()
			return
		}
		if remaining > 0 {
			remaining -= int64(n)
		}
		eof := rerr != nil || remaining == 0
		if eof {
			if tr := trailers(resp.Trailer); tr != nil {
				if n > 0 {
					res, err := x.f.ResponseBody(chunk, false)
					if !x.onResponse(res, err, true) {
						return
					}
				}
				res, err := x.f.ResponseTrailers(tr)
				x.onResponse(res, err, false)
				return
			}
			res, err := x.f.ResponseBody(chunk, true)
			x.onResponse(res, err, false)
			return
		}
		if n == 0 {
			continue
		}
		res, err := x.f.ResponseBody(chunk, false)
		if !x.onResponse(res, err, true) {
			return
		}
	}
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(ct string) bool {
	const sse = "text/event-stream"
	return len(ct) >= len(sse) && strings.EqualFold(ct[:len(sse)], sse)
}

// upstreamFailed ends an exchange whose upstream body broke off.
func (x *exchange) upstreamFailed() {
	if x.ctx.Err() != nil {
		return // the client went away
	}
	if x.sentHeaders {
		abort(x.w)
		return
	}
	switch cause := context.Cause(x.upCtx); {
	case errors.Is(cause, errIdleTimeout):
		x.writeLocal(http.StatusRequestTimeout, nil, []byte(bodyIdleTimeout))
	case errors.Is(cause, errRouteTimeout):
		x.writeLocal(http.StatusGatewayTimeout, nil, []byte(bodyTimeout))
	default:
		x.writeLocal(http.StatusServiceUnavailable, nil, []byte(bodyConnectFailure+"connection termination"))
	}
}

// onResponse applies a response-direction result; more means the response
// continues (so what was written is flushed now). False ends the exchange.
func (x *exchange) onResponse(res *envoytest.Result, err error, more bool) bool {
	if err != nil {
		if x.ctx.Err() != nil {
			return false // the client went away
		}
		x.e.logger.Error("edge: ext_proc client", "error", err)
		if x.sentHeaders {
			abort(x.w)
		} else {
			x.writeLocal(http.StatusInternalServerError, nil, nil)
		}
		return false
	}
	if res.Reset || (res.LocalReply != nil && x.sentHeaders) {
		abort(x.w)
		return false
	}
	if res.LocalReply != nil {
		x.writeLocal(res.LocalReply.Status, res.LocalReply.Headers, res.LocalReply.Body)
		return false
	}
	wrote := false
	if res.Headers != nil {
		x.writeHeaders(res.Headers)
		wrote = true
	}
	if len(res.Body) > 0 {
		if _, err := x.w.Write(res.Body); err != nil {
			x.cancelUp(err)
			return false
		}
		wrote = true
	}
	if res.Trailers != nil {
		for _, kv := range res.Trailers {
			x.w.Header().Add(http.TrailerPrefix+kv.Key, kv.Value)
		}
	}
	if wrote && more && x.flushEach {
		if err := x.rc.Flush(); err != nil {
			x.cancelUp(err)
			return false
		}
		x.touch()
	}
	return true
}

func (x *exchange) writeHeaders(h envoytest.Headers) {
	status := http.StatusOK
	if rw, ok := x.w.(*response); ok {
		// HTTP/1: the list goes out as it is, names lower-case as
		// Envoy's codec writes them; h is the filter's to give away.
		out := h[:0]
		for _, kv := range h {
			switch {
			case kv.Key == ":status":
				if n, err := strconv.Atoi(kv.Value); err == nil {
					status = n
				}
			case !strings.HasPrefix(kv.Key, ":") && !hopByHop(kv.Key):
				out = append(out, kv)
			}
		}
		rw.setHeaders(status, out)
		x.sentHeaders = true
		return
	}
	dst := x.w.Header()
	vals := make([]string, len(h)) // backing for the one-value lists
	for i, kv := range h {
		if kv.Key == ":status" {
			if n, err := strconv.Atoi(kv.Value); err == nil {
				status = n
			}
			continue
		}
		if strings.HasPrefix(kv.Key, ":") || hopByHop(kv.Key) {
			continue
		}
		addHeader(dst, http.CanonicalHeaderKey(kv.Key), kv.Value, vals[i:i+1:i+1])
	}
	x.w.WriteHeader(status)
	x.sentHeaders = true
}

// addHeader adds v under the canonical key k; one is a one-element slice
// (capacity 1) to hold v when k is new, so a header costs no allocation of
// its own.
func addHeader(h http.Header, k, v string, one []string) {
	if old, ok := h[k]; ok {
		h[k] = append(old, v)
		return
	}
	one[0] = v
	h[k] = one
}

// writeLocal sends a local reply. h may carry :status and headers.
func (x *exchange) writeLocal(status int, h envoytest.Headers, body []byte) {
	if x.sentHeaders {
		abort(x.w)
		return
	}
	if rw, ok := x.w.(*response); ok {
		// HTTP/1: lower-case names in order, as for proxied responses.
		out := make(envoytest.Headers, 0, len(h)+2)
		for _, kv := range h {
			if !strings.HasPrefix(kv.Key, ":") && !hopByHop(kv.Key) && kv.Key != "content-length" {
				out = append(out, kv)
			}
		}
		if len(body) > 0 && !out.Has("content-type") {
			out = append(out, envoytest.Header{Key: "content-type", Value: "text/plain"})
		}
		out = append(out, envoytest.Header{Key: "content-length", Value: strconv.Itoa(len(body))})
		rw.setHeaders(status, out)
	} else {
		dst := x.w.Header()
		for _, kv := range h {
			if strings.HasPrefix(kv.Key, ":") || hopByHop(kv.Key) || kv.Key == "content-length" {
				continue
			}
			k := http.CanonicalHeaderKey(kv.Key)
			dst[k] = append(dst[k], kv.Value)
		}
		if len(body) > 0 && dst.Get("Content-Type") == "" {
			dst.Set("Content-Type", "text/plain")
		}
		dst.Set("Content-Length", strconv.Itoa(len(body)))
		x.w.WriteHeader(status)
	}
	x.sentHeaders = true
	_, _ = x.w.Write(body)
}

// localResponse is a router local reply, passed through the response
// direction of the filter like an upstream response.
func localResponse(status int, headers []headerOp, body []byte) *http.Response {
	h := http.Header{}
	for _, op := range headers {
		k := http.CanonicalHeaderKey(op.key)
		if op.add {
			h.Add(k, op.value)
		} else {
			h.Set(k, op.value)
		}
	}
	if len(body) > 0 && h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	var rb io.ReadCloser = http.NoBody
	if len(body) > 0 {
		rb = io.NopCloser(bytes.NewReader(body))
	}
	return &http.Response{StatusCode: status, Header: h, Body: rb, ContentLength: int64(len(body))}
}

// downstreamHeaders is the request as Envoy's HCM hands it to the filters:
// from the fields the HTTP/1 server parsed (in order), else from r.Header
// (HTTP/2).
func downstreamHeaders(w http.ResponseWriter, r *http.Request) envoytest.Headers {
	var fields envoytest.Headers
	rw, h1 := w.(*response)
	if h1 {
		fields = rw.fields
	}
	// Room for the pseudo-headers, x-forwarded-proto, x-request-id and the
	// headers a processor sets (the stream keeps and extends this list).
	h := make(envoytest.Headers, 0, len(fields)+len(r.Header)+12)
	h = append(h,
		envoytest.Header{Key: ":authority", Value: r.Host},
		envoytest.Header{Key: ":path", Value: r.RequestURI},
		envoytest.Header{Key: ":method", Value: r.Method},
		envoytest.Header{Key: ":scheme", Value: "http"},
	)
	hasID := false
	keep := func(lk string) bool {
		switch {
		case hopByHop(lk), lk == "host", lk == "x-forwarded-proto":
			return false
		case lk == "x-request-id":
			hasID = true
		}
		return true
	}
	for _, f := range fields {
		if keep(f.Key) {
			h = append(h, f)
		}
	}
	for k, vs := range r.Header {
		if lk := lowerKey(k); keep(lk) {
			for _, v := range vs {
				h = append(h, envoytest.Header{Key: lk, Value: v})
			}
		}
	}
	h = append(h, envoytest.Header{Key: "x-forwarded-proto", Value: "http"})
	if !hasID {
		h = append(h, envoytest.Header{Key: "x-request-id", Value: requestID()})
	}
	return h
}

// requestID is a random UUID (version 4), like Envoy's x-request-id.
func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// lowerNames maps the canonical form of common header names to the
// lower-case form Envoy and the filter use, so that converting them costs no
// allocation.
var lowerNames = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"accept", "accept-encoding", "accept-language", "anthropic-beta", "anthropic-version",
		"api-key", "authorization", "cache-control", "connection", "content-encoding",
		"content-length", "content-type", "cookie", "date", "host", "keep-alive",
		"openai-organization", "openai-processing-ms", "openai-project", "openai-version",
		"origin", "referer", "request-id", "retry-after", "server", "set-cookie",
		"transfer-encoding", "user-agent", "vary", "x-api-key", "x-forwarded-for",
		"x-forwarded-proto", "x-request-id", "x-stainless-arch", "x-stainless-async",
		"x-stainless-lang", "x-stainless-os", "x-stainless-package-version",
		"x-stainless-retry-count", "x-stainless-runtime", "x-stainless-runtime-version",
		"x-stainless-timeout",
		"x-ratelimit-limit-requests", "x-ratelimit-limit-tokens", "x-ratelimit-remaining-requests",
		"x-ratelimit-remaining-tokens", "x-ratelimit-reset-requests", "x-ratelimit-reset-tokens",
		"x-tollgate-request-id", "x-tollgate-cost",
	} {
		m[http.CanonicalHeaderKey(k)] = k
	}
	return m
}()

// lowerKey is k in lower case.
func lowerKey(k string) string {
	if l, ok := lowerNames[k]; ok {
		return l
	}
	return strings.ToLower(k)
}

// trailers converts Go trailers with values; nil when there are none.
func trailers(t http.Header) envoytest.Headers {
	var out envoytest.Headers
	for k, vs := range t {
		for _, v := range vs {
			out = append(out, envoytest.Header{Key: strings.ToLower(k), Value: v})
		}
	}
	return out
}

func hopByHop(k string) bool {
	switch k {
	case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer":
		return true
	}
	return false
}

// abort ends the downstream stream without finishing it: the client sees a
// truncated body (HTTP/1.1) or a stream reset (HTTP/2), as after an Envoy
// stream reset.
func abort(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	// HTTP/2 cannot be hijacked; net/http documents ErrAbortHandler as the way
	// to reset the stream without logging.
	panic(http.ErrAbortHandler)
}
