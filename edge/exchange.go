package edge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/h1"
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
// next read or close: the filter copies what it keeps (extprocfilter.Stream
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

// exchange is one HTTP request through the filter and the router.
type exchange struct {
	e   *Edge
	st  *state
	w   http.ResponseWriter
	r   *http.Request
	ctx context.Context // the downstream request's
	f   filter

	first      *route
	fwd        extprocfilter.Headers // request headers released by the filter
	body       []byte                // request body released before routing
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
	upAbort    *h1.Abort // the upstream connection in use, cut off by cancelUp (&abort0, then one per retry)
	abort0     h1.Abort
	upMu       sync.Mutex                 // upCancel and upAbort: replaced by a retry (retry.go) while cancelUp may run
	upDone     bool                       // cancelUp ended the upstream side for good (not a per-try timeout)
	goneHook   *h1.Response               // the HTTP/1.1 response whose OnGone hook reaches cancelUp
	stopGone   func() bool                // else the link from ctx, an AfterFunc
	idle       time.Duration              // stream idle timeout, 0 for none
	deadline   int64                      // h1.MonoNow when the route timeout fires, 0 for none
	timer      *time.Timer                // one timer for both
	et         *exTimer                   // timer's pooled holder (timer.go)
	timerP     atomic.Pointer[time.Timer] // timer, for timerCheck's goroutine
	lastActive atomic.Int64               // h1.MonoNow at the last stream activity
	// attemptDeadline is h1.MonoNow when the running attempt's per-try
	// timeout fires, 0 when none runs.
	attemptDeadline atomic.Int64
	release         func()
	tryF            *extprocfilter.Stream // the running try's upstream filter (pertry.go)
	tryFwd          extprocfilter.Headers // the request headers it released: the router's after the try
	redirects       int                   // internal redirects followed (redirect.go)

	sentHeaders bool // response headers went downstream
	flushEach   bool // flush every write downstream: a stream (SSE, or a body of unknown length)
	rc          *http.ResponseController
}

func (e *Edge) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if e.health != nil && e.serveHealth(w, r) {
		return
	}
	if len(e.services) > 0 && e.serveService(w, r) {
		return
	}
	x := &exchange{e: e, st: e.state.Load(), w: w, r: r, ctx: r.Context(), rc: http.NewResponseController(w)}
	x.upCtx, x.upCancel = context.WithCancelCause(context.WithoutCancel(x.ctx))
	x.upAbort = &x.abort0
	x.abort0.Written = x
	if rw, ok := w.(*h1.Response); ok {
		x.goneHook = rw
		x.goneHook.OnGone(x.cancelUp)
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
	x.upMu.Lock()
	cancel, ab := x.upCancel, x.upAbort
	if !errors.Is(cause, errPerTry) {
		x.upDone = true
	}
	x.upMu.Unlock()
	cancel(cause)
	ab.Fire()
}

func (x *exchange) finish() {
	if x.goneHook != nil {
		x.goneHook.OnGone(nil)
	} else {
		x.stopGone()
	}
	x.cancelUp(nil)
	x.body = nil // the exchange stays reachable a while (a large body need not)
	if x.async != nil && !x.asyncDone {
		// The request ended while its upstream request was still running:
		// wait for it (it sees the cancellation) before touching its state.
		_ = x.pipe.CloseWithError(errAborted)
		if resp := <-x.async; resp != nil {
			_ = resp.Body.Close()
		}
	}
	x.stopTimer()
	if x.f != nil {
		x.f.Release()
	}
	x.releaseTry()
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
		x.f = x.first.filter.Start(x.ctx, extprocfilter.WithOwnedHeaders())
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
	for {
		var resp *http.Response
		rt := x.route()
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
			resp = x.forward(rt) //nolint:bodyclose // respond or redirected closes it
		}
		if resp == nil {
			return
		}
		if followed, ok := x.redirected(rt, resp); followed {
			if !ok {
				return
			}
			continue // the recreated request (redirect.go)
		}
		x.respond(resp)
		return
	}
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
func (x *exchange) onRequest(res *extprocfilter.Result, err error, last bool) bool {
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
		} else if _, owned := x.f.(*extprocfilter.Stream); owned && x.body == nil {
			x.body = res.Body // a Stream's Result.Body is ours: a large body is not copied again
		} else {
			x.body = append(x.body, res.Body...)
		}
	}
	// The Stream reuses *res for its next result: what it points to is the
	// exchange's now, which may drop it while the request waits (a Result
	// of a Stream is valid until its next call; nothing reads it again).
	*res = extprocfilter.Result{}
	return true
}

// startAsync starts the upstream request with a streamed body.
func (x *exchange) startAsync() {
	pr, pw := io.Pipe()
	x.pipe = pw
	x.async = make(chan *http.Response, 1)
	rt := x.route()
	go func() { x.async <- x.forwardStream(rt, pr) }() //nolint:bodyclose // run or finish closes it
}

// route is the route of the released headers: the first match, or a new
// match when the filter cleared the route cache (R3.1).
func (x *exchange) route() *route {
	if !x.clearRoute {
		return x.first
	}
	if !x.rematched { // the released headers do not change: match once
		// Against the latest configuration, not the one the request began
		// with: the processor may have routed it to a deployment that
		// arrived meanwhile (it uses one only once the data plane has it).
		x.st = x.e.state.Load()
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

// startTimers arms the route timeout and the stream idle timeout, on one
// timer (which also keeps the per-try timeouts, armAttempt): it fires when
// the nearest is due, and cancels or re-arms.
func (x *exchange) startTimers(rt *route) {
	if x.timer != nil {
		return
	}
	now := h1.MonoNow()
	if rt.timeout > 0 {
		x.deadline = now + int64(rt.timeout)
	}
	x.idle = x.idleTimeout(rt)
	if x.deadline == 0 && x.idle <= 0 {
		return
	}
	x.lastActive.Store(now)
	x.timer = x.newTimer()
	x.timer.Reset(x.due(now))
}

// armAttempt starts an upstream attempt's per-try timeout of d.
func (x *exchange) armAttempt(d time.Duration) {
	now := h1.MonoNow()
	x.attemptDeadline.Store(now + int64(d))
	if x.timer == nil {
		x.timer = x.newTimer()
	}
	x.timer.Reset(x.due(now))
}

// touch records stream activity for the idle timeout.
// Activity is a timestamp, not a timer reset per chunk: the timer, when it
// fires, re-arms itself for what is left of the idle time.
func (x *exchange) touch() {
	if x.idle > 0 {
		x.lastActive.Store(h1.MonoNow())
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
	now := h1.MonoNow()
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

// downstreamHeaders is the request as Envoy's HCM hands it to the filters:
// from the fields the HTTP/1 server parsed (in order), else from r.Header
// (HTTP/2).
func downstreamHeaders(w http.ResponseWriter, r *http.Request) extprocfilter.Headers {
	var fields h1.Fields
	if rw, ok := w.(*h1.Response); ok {
		fields = rw.Fields()
	}
	// Room for the pseudo-headers, x-forwarded-proto, x-request-id and the
	// headers a processor sets (the stream keeps and extends this list).
	h := make(extprocfilter.Headers, 0, len(fields)+len(r.Header)+12)
	h = append(h,
		extprocfilter.Header{Key: ":authority", Value: r.Host},
		extprocfilter.Header{Key: ":path", Value: r.RequestURI},
		extprocfilter.Header{Key: ":method", Value: r.Method},
		extprocfilter.Header{Key: ":scheme", Value: "http"},
	)
	hasID := false
	conn := fields.ConnectionValues()
	if v := r.Header["Connection"]; v != nil {
		conn = append(conn, v...)
	}
	keep := func(lk string) bool {
		switch {
		case h1.HopByHop(lk), h1.Nominated(conn, lk), lk == "host", lk == "x-forwarded-proto":
			return false
		case lk == "x-request-id":
			hasID = true
		}
		return true
	}
	for _, f := range fields {
		if keep(f.Key) {
			h = append(h, extprocfilter.Header{Key: f.Key, Value: f.Value})
		}
	}
	for k, vs := range r.Header {
		if lk := h1.LowerKey(k); keep(lk) {
			for _, v := range vs {
				h = append(h, extprocfilter.Header{Key: lk, Value: v})
			}
		}
	}
	h = append(h, extprocfilter.Header{Key: "x-forwarded-proto", Value: "http"})
	if !hasID {
		h = append(h, extprocfilter.Header{Key: "x-request-id", Value: requestID()})
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

// trailers converts Go trailers with values; nil when there are none.
func trailers(t http.Header) extprocfilter.Headers {
	var out extprocfilter.Headers
	for k, vs := range t {
		for _, v := range vs {
			out = append(out, extprocfilter.Header{Key: strings.ToLower(k), Value: v})
		}
	}
	return out
}
