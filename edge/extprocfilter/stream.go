package extprocfilter

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// Stream is the ext_proc filter of one HTTP request: the request (decoding)
// and response (encoding) state machines sharing one gRPC stream (R1.3).
//
// Calls follow the HTTP message: RequestHeaders, then RequestBody chunks and
// RequestTrailers unless the headers ended the request, then the same for the
// response. Each call returns what Envoy does next. Calls must not overlap
// (they are serialised); Close may come from any goroutine and ends the
// stream (R1.8d). Cancelling the context given to Start resets the HTTP
// stream: a waiting call returns the context's error. Its owner may give it
// back with Release, to be reused by a later Start (pool.go).
type Stream struct {
	c      *Client
	cfg    *Config
	cfgErr error
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex

	// link is the open stream to the processor (nil until the first
	// message, R1.1); streamClosed once Envoy closed it (closeStream).
	link         link
	streamClosed bool
	// inCall: the transport calls the processor in the caller's goroutine
	// (Sync): a message is built in a scratch taken for it (msg) and
	// given back once handled; syncL is the processor's link, kept with
	// the Stream when it is reused.
	inCall bool
	msg    *scratch
	syncL  *syncLink
	// ownHeaders: the header lists passed in are the stream's (WithOwnedHeaders).
	ownHeaders bool

	// timer is waitFor's, kept stopped between calls: one per stream
	// rather than one per message.
	timer     *time.Timer
	sentFirst bool

	req, resp direction

	// complete is Envoy's processing_complete_: the processor is detached
	// (R1.9, fail-open) or a local reply was produced; nothing more is sent.
	complete bool
	// outcome is the local reply or reset to return, once.
	outcome *Result
	// failure is a fail-open or R1.9 event to report in the next Result.
	failure error
	// downstreamStarted: the response headers went downstream (R2.8, N4.3).
	downstreamStarted bool
	finished          bool // outcome returned, context ended or closed
	closed            bool
	released          bool // given back (pool.go): any use panics
	metadata          map[string]*structpb.Struct
	// res is the Result every call but the last returns (the outcome is
	// its own): one allocation less per call.
	res Result
}

func newStream(ctx context.Context, c *Client, o startOptions) *Stream {
	cfg := &c.cfg // read-only: the client's copy, validated once
	s := getStream()
	s.c, s.cfg, s.cfgErr, s.ownHeaders = c, cfg, errors.Join(c.cfgErr, o.attrsInvalid), o.ownHeaders
	if c.t.inCall() {
		// A Sync stream's calls run in its caller's goroutine: no call
		// waits in a select that a reset must wake, so the stream lives on
		// the context it was started with (one context and the parent's
		// registration of it less per request).
		s.ctx, s.cancel = ctx, noCancel
		s.inCall = true
		if s.syncL == nil {
			s.syncL = new(syncLink)
		}
	} else {
		s.ctx, s.cancel = context.WithCancel(ctx)
	}
	s.req = direction{s: s, request: true, attrs: o.reqAttrs}
	s.resp = direction{s: s, attrs: o.respAttrs}
	mode := cfg.mode()
	if o.routeMode != nil {
		mode = o.routeMode
		if !supportedBodyMode(mode.GetRequestBodyMode()) || !supportedBodyMode(mode.GetResponseBodyMode()) {
			s.cfgErr = errors.Join(s.cfgErr, fmt.Errorf("extprocfilter: route body mode not supported"))
		}
	}
	s.req.setMode(mode)
	s.resp.setMode(mode)
	return s
}

// DynamicMetadata returns the dynamic metadata the processor wrote so far:
// the namespaces of its replies' dynamic_metadata that are listed in
// Config.ReceivingNamespaces and hold a Struct (R2.6). The map is a copy.
func (s *Stream) DynamicMetadata() map[string]*structpb.Struct {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkLive()
	out := make(map[string]*structpb.Struct, len(s.metadata))
	for k, v := range s.metadata {
		out[k] = proto.Clone(v).(*structpb.Struct)
	}
	return out
}

// RequestHeaders hands the filter the request headers; endOfStream means the
// request has no body (R1.4).
func (s *Stream) RequestHeaders(h Headers, endOfStream bool) (*Result, error) {
	return s.onHeaders(&s.req, h, endOfStream)
}

// RequestBody hands the filter one request body chunk. BUFFERED accumulates
// until endOfStream and answers 413 above RequestBufferLimit (R1.5b); STREAMED
// sends one message per chunk (R1.5c).
func (s *Stream) RequestBody(chunk []byte, endOfStream bool) (*Result, error) {
	return s.onBody(&s.req, chunk, endOfStream)
}

// RequestTrailers hands the filter the request trailers, which end the request.
func (s *Stream) RequestTrailers(h Headers) (*Result, error) {
	return s.onTrailers(&s.req, h)
}

// ResponseHeaders hands the filter the response headers (with :status);
// endOfStream means the response has no body.
func (s *Stream) ResponseHeaders(h Headers, endOfStream bool) (*Result, error) {
	return s.onHeaders(&s.resp, h, endOfStream)
}

// ResponseBody hands the filter one response body chunk. STREAMED (usually
// after a mode_override) sends one message per chunk and returns the mutated
// bytes whose replies arrived; BUFFERED accumulates until endOfStream.
func (s *Stream) ResponseBody(chunk []byte, endOfStream bool) (*Result, error) {
	return s.onBody(&s.resp, chunk, endOfStream)
}

// ResponseTrailers hands the filter the response trailers, which end the
// response.
func (s *Stream) ResponseTrailers(h Headers) (*Result, error) {
	return s.onTrailers(&s.resp, h)
}

// Close ends the filter: the HTTP stream ended or was reset (R1.8d). It
// half-closes and cancels the gRPC stream (waiting up to RemoteCloseTimeout
// for the server first with GracefulClose) and frees everything. It may be
// called from another goroutine while a call waits for the processor: that is
// an HTTP stream reset, the waiting call returns context.Canceled (over
// [Sync] the processor runs in the call's goroutine and cannot be cut off:
// Close waits for it, the call returns its result and the next one
// ErrFinished). It is safe to call more than once, but not after Release.
func (s *Stream) Close() {
	if !s.mu.TryLock() {
		s.cancel() // a call is waiting: reset, so that it returns
		s.mu.Lock()
	}
	if s.released {
		s.mu.Unlock()
		usedAfterRelease()
	}
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.finished = true
	s.complete = true
	s.closeStream()
	if s.inCall {
		// The processor finished (closeStream): nothing uses the in-call
		// link any more.
		s.link = nil
	}
	l := s.link
	s.mu.Unlock()
	if l != nil {
		l.wait()
	}
	s.cancel()
}

func (s *Stream) usable() error {
	s.checkLive()
	switch {
	case s.cfgErr != nil:
		return s.cfgErr
	case s.finished:
		return ErrFinished
	case s.ctx.Err() != nil:
		s.finished = true
		return s.ctx.Err()
	}
	return nil
}

// waitFor processes replies, timers and the request context until done holds,
// processing is complete, or nothing is outstanding.
func (s *Stream) waitFor(done func() bool) {
	armed := false
	defer func() {
		if armed {
			s.timer.Stop()
		}
	}()
	for !s.complete && !done() {
		if s.req.cb == cbIdle && s.resp.cb == cbIdle {
			return
		}
		// A Sync stream's replies are already here: no timer to arm.
		if s.takePending() {
			continue
		}
		var timerC <-chan time.Time
		if dl, ok := s.nextDeadline(); ok {
			if s.timer == nil {
				s.timer = time.NewTimer(time.Until(dl))
			} else {
				s.timer.Reset(time.Until(dl))
			}
			armed, timerC = true, s.timer.C
		}
		select {
		case it := <-s.arrivals():
			s.onRecv(it)
		case <-timerC:
			s.onTimer()
		case <-s.ctx.Done():
			// The HTTP stream was reset: nothing more to do (R1.8d).
			s.complete = true
			s.closeStream()
			return
		}
	}
}

// catchUp handles what happened while the caller was away (replies, an
// expired timer), as Envoy's event loop would have; it reports whether that
// ended the request.
func (s *Stream) catchUp() bool {
	s.drain()
	return s.outcome != nil
}

// drain processes the replies that already arrived, without waiting, then
// fires a message timer that expired meanwhile.
func (s *Stream) drain() {
	for !s.complete {
		if s.takePending() {
			continue
		}
		select {
		case it := <-s.arrivals():
			s.onRecv(it)
			continue
		default:
		}
		break
	}
	if !s.complete {
		s.onTimer()
	}
}

func (s *Stream) nextDeadline() (time.Time, bool) {
	var dl time.Time
	ok := false
	for _, d := range []*direction{&s.req, &s.resp} {
		if d.timerOn && (!ok || d.deadline.Before(dl)) {
			dl, ok = d.deadline, true
		}
	}
	return dl, ok
}

func (s *Stream) result(d *direction) (*Result, error) {
	if s.outcome != nil {
		r := s.outcome
		s.outcome = nil
		s.finished = true
		return r, nil
	}
	if err := s.ctx.Err(); err != nil {
		s.finished = true
		return nil, err
	}
	r := &s.res // reused: a Result is read before the next call (Result)
	*r = Result{
		Continue:        !d.holding && !d.buffering,
		Headers:         d.outHeaders,
		Body:            d.out,
		Trailers:        d.outTrailers,
		ClearRouteCache: d.clearRoute,
		Failure:         s.failure,
	}
	s.failure = nil
	d.outHeaders, d.out, d.outTrailers, d.clearRoute = nil, nil, nil, false
	return r, nil
}

// send opens the gRPC stream if needed (R1.1) and sends m, starting the call
