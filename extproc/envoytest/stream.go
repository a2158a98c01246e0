package envoytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
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
// stream: a waiting call returns the context's error.
type Stream struct {
	c      *Client
	cfg    *Config
	cfgErr error
	ctx    context.Context
	cancel context.CancelFunc

	mu sync.Mutex

	// gRPC stream state.
	grpc         extprocv3.ExternalProcessor_ProcessClient
	streamCancel context.CancelFunc
	streamClosed bool
	recv         chan recvItem
	readerDone   chan struct{}
	// direct is the in-process pipe of a Direct stream, read without a reader
	// goroutine; directEnded once its final status was handled.
	direct      *directPipe
	directEnded bool
	// sync is the processor of a Sync stream, called in the caller's
	// goroutine; syncEnded once it finished (Handle's error or Close).
	// pending holds its replies (and its end) until they are handled, as a
	// gRPC stream's receive queue would; pendBuf is pending's first array.
	sync      SyncStream
	syncEnded bool
	pending   []recvItem
	pendBuf   [2]recvItem
	queue     func(*extprocv3.ProcessingResponse) // Handle's send: appends to pending
	scratch   *scratch                            // a Sync stream's reused messages
	// ownHeaders: the header lists passed in are the stream's (WithOwnedHeaders).
	ownHeaders bool

	// timer is waitFor's, kept stopped between calls: one per stream
	// rather than one per message.
	timer     *time.Timer
	bg        sync.WaitGroup
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
	metadata          map[string]*structpb.Struct
}

type recvItem struct {
	resp *extprocv3.ProcessingResponse
	err  error
	at   time.Time // when a Sync stream's processor produced it
}

// callback is what a direction is waiting for (Envoy's CallbackState, R1.3).
type callback int

const (
	cbIdle callback = iota
	cbHeaders
	cbBufferedBody
	cbStreamedBody
	cbPartialBody
	cbTrailers
)

type chunk struct {
	data []byte
	eos  bool
}

// direction is one of the two state machines (Envoy's ProcessorState).
type direction struct {
	s       *Stream
	request bool

	// Effective processing mode of this direction (R1.4–R1.6, R2.7).
	sendHeaders  bool
	sendTrailers bool
	bodyMode     extprocfilterv3.ProcessingMode_BodySendMode

	cb                 callback
	timerOn            bool
	deadline           time.Time
	newTimeoutReceived bool

	started      bool // headers seen
	noBody       bool // the headers ended the message (R1.4)
	bodyEnded    bool // end of stream seen
	trailersSeen bool
	stripCL      bool // decided when the headers arrived (R2.10)

	held         Headers // headers_ while holding
	holding      bool
	buf          []byte // BUFFERED / BUFFERED_PARTIAL data not yet released
	buffering    bool   // buf holds body data back
	bodySent     bool   // the buffered body message went out
	dataSeen     bool   // at least one body call
	partialDone  bool   // BUFFERED_PARTIAL reply processed: the rest flows
	bodyReplaced bool   // CONTINUE_AND_REPLACE with a body (R2.3)
	queue        []chunk
	trailers     Headers
	trailersHeld bool

	attrs     *structpb.Struct // R5.3, sent once
	attrsSent bool

	// Outputs gathered for the next Result of this direction.
	outHeaders  Headers
	out         []byte
	outTrailers Headers
	clearRoute  bool
}

func newStream(ctx context.Context, c *Client, o startOptions) *Stream {
	cfg := &c.cfg // read-only: the client's copy, validated once
	s := &Stream{c: c, cfg: cfg, cfgErr: errors.Join(c.cfgErr, o.attrsInvalid), ownHeaders: o.ownHeaders}
	if _, ok := c.cc.(syncClient); ok {
		// A Sync stream's calls run in its caller's goroutine: no call
		// waits in a select that a reset must wake, so the stream lives on
		// the context it was started with (one context and the parent's
		// registration of it less per request).
		s.ctx, s.cancel = ctx, func() {}
		s.scratch = getScratch()
	} else {
		s.ctx, s.cancel = context.WithCancel(ctx)
	}
	s.req = direction{s: s, request: true, attrs: o.reqAttrs}
	s.resp = direction{s: s, attrs: o.respAttrs}
	mode := cfg.mode()
	if o.routeMode != nil {
		mode = o.routeMode
		if !supportedBodyMode(mode.GetRequestBodyMode()) || !supportedBodyMode(mode.GetResponseBodyMode()) {
			s.cfgErr = errors.Join(s.cfgErr, fmt.Errorf("envoytest: route body mode not supported"))
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
// ErrFinished). It is safe to call more than once.
func (s *Stream) Close() {
	if !s.mu.TryLock() {
		s.cancel() // a call is waiting: reset, so that it returns
		s.mu.Lock()
	}
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.finished = true
	s.complete = true
	s.closeStream()
	done := s.readerDone
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	s.bg.Wait()
	s.cancel()
}

func (s *Stream) usable() error {
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

func (s *Stream) onHeaders(d *direction, h Headers, eos bool) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if s.catchUp() {
		return s.result(d)
	}
	if d.started {
		return nil, fmt.Errorf("%w: %s headers twice", ErrOutOfOrder, d.name())
	}
	d.started = true
	d.noBody = eos
	d.bodyEnded = eos
	if s.ownHeaders && h.normalized() {
		d.held = h // the caller's to give (WithOwnedHeaders)
	} else {
		d.held = h.normalize()
	}
	d.holding = true
	// R2.10: decided now; a later mode_override does not change it.
	d.stripCL = !s.cfg.AllowContentLengthHeader && (d.bodyMode == extprocfilterv3.ProcessingMode_STREAMED ||
		d.bodyMode == extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED ||
		d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL ||
		(d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED && !d.sendHeaders))
	switch {
	case s.complete:
		d.continueProcessing()
	case !d.sendHeaders:
		// R1.7: with header SKIP the headers go on immediately.
		d.continueProcessing()
		if !d.request && d.noExternalProcess() {
			s.closeStream() // R1.8b
		}
	default:
		s.send(d, d.headersMsg(eos), cbHeaders)
		s.waitFor(func() bool { return d.cb != cbHeaders })
	}
	return s.result(d)
}

func (s *Stream) onBody(d *direction, data []byte, eos bool) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if s.catchUp() {
		return s.result(d)
	}
	if !d.started || d.bodyEnded {
		return nil, fmt.Errorf("%w: %s body without headers or after its end", ErrOutOfOrder, d.name())
	}
	d.bodyEnded = eos
	d.dataSeen = true
	// The caller may reuse data's buffer: what is kept is copied.
	switch {
	case s.complete:
		d.continueProcessing()
		d.out = append(d.out, data...)
	case d.bodyReplaced:
		// R2.3: the original body is discarded after CONTINUE_AND_REPLACE.
	case d.partialDone || d.bodyMode == extprocfilterv3.ProcessingMode_NONE:
		d.out = append(d.out, data...)
	case d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED:
		d.buf = append(d.buf, data...)
		d.buffering = true
		if len(d.buf) > d.limit() {
			s.tooLarge(d)
			break
		}
		if eos {
			d.sendBuffered(cbBufferedBody, true)
			s.waitFor(func() bool { return d.cb == cbIdle })
		}
	case d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL:
		// R1.5d: send at end of stream or when the limit is reached.
		d.buf = append(d.buf, data...)
		d.buffering = true
		if eos || len(d.buf) >= d.limit() {
			d.sendBuffered(cbPartialBody, eos)
			s.waitFor(func() bool { return d.cb == cbIdle })
		}
	case d.bodyMode == extprocfilterv3.ProcessingMode_STREAMED:
		// R1.5c: one message per chunk, replies consumed in FIFO order.
		data = bytes.Clone(data)
		d.queue = append(d.queue, chunk{data: data, eos: eos})
		s.send(d, d.bodyMsg(s.processorCopy(data), eos), cbStreamedBody)
		if eos {
			s.waitFor(func() bool { return len(d.queue) == 0 })
		} else {
			w := s.cfg.window()
			s.waitFor(func() bool { return len(d.queue) < w })
			s.drain()
		}
	}
	return s.result(d)
}

func (s *Stream) onTrailers(d *direction, h Headers) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if s.catchUp() {
		return s.result(d)
	}
	if !d.started || d.bodyEnded {
		return nil, fmt.Errorf("%w: %s trailers without headers or after the end of stream", ErrOutOfOrder, d.name())
	}
	d.bodyEnded = true
	d.trailersSeen = true
	d.trailers = h.normalize()
	d.trailersHeld = true
	switch {
	case s.complete:
		d.continueProcessing()
	case d.dataSeen && !d.bodyReplaced && !d.partialDone && !d.bodySent && d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED:
		// R1.5b: trailers end the buffered body, sent with end_of_stream=false;
		// the trailers follow its reply (R1.6).
		d.sendBuffered(cbBufferedBody, false)
	case d.dataSeen && !d.bodyReplaced && !d.partialDone && !d.bodySent && d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL:
		d.sendBuffered(cbPartialBody, false)
	case len(d.queue) > 0:
		// R1.6: trailers go out after every STREAMED body reply (finalizeBody).
	case d.sendTrailers:
		s.send(d, d.trailersMsg(), cbTrailers)
	default:
		d.continueProcessing()
	}
	s.waitFor(func() bool { return d.cb == cbIdle && !d.trailersHeld })
	return s.result(d)
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
		dresps, ddone := s.directChans()
		select {
		case it := <-s.recv:
			s.onRecv(it)
		case r := <-dresps:
			s.onRecv(recvItem{resp: r})
		case <-ddone:
			s.onRecv(s.directFinal())
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
		dresps, ddone := s.directChans()
		select {
		case it := <-s.recv:
			s.onRecv(it)
			continue
		case r := <-dresps:
			s.onRecv(recvItem{resp: r})
			continue
		case <-ddone:
			s.onRecv(s.directFinal())
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
	r := &Result{
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
// and its message timer. If the stream is gone, the processor is detached.
func (s *Stream) send(d *direction, m *extprocv3.ProcessingRequest, cb callback) {
	d.startCall(cb)
	if s.streamClosed || !s.open() {
		if !s.complete {
			// Closed earlier by the close optimization: nothing to talk to.
			s.complete = true
			s.clearAsyncState()
		}
		return
	}
	if s.scratch != nil {
		m.MetadataContext = &s.scratch.meta // R5.4
	} else {
		m.MetadataContext = &corev3.Metadata{} // R5.4
	}
	if d.attrs != nil && !d.attrsSent {
		// R5.3: attributes in the first message of the direction.
		d.attrsSent = true
		m.Attributes = map[string]*structpb.Struct{attributesKey: d.attrs}
	}
	if !s.sentFirst {
		// R1.2: protocol_config on the first message only.
		s.sentFirst = true
		m.ProtocolConfig = &extprocv3.ProtocolConfiguration{
			RequestBodyMode:  s.req.bodyMode,
			ResponseBodyMode: s.resp.bodyMode,
		}
	}
	if s.sync != nil {
		s.syncSend(m)
		return
	}
	if err := s.grpc.Send(m); err != nil && !errors.Is(err, io.EOF) {
		// io.EOF: the stream ended; its status comes from Recv.
		s.onGrpcError(err)
	}
}

func (s *Stream) open() bool {
	if s.grpc != nil || s.sync != nil {
		return true
	}
	if sc, ok := s.c.cc.(syncClient); ok && s.ctx.Err() == nil {
		// In-process, called directly: the processor's stream lives as long
		// as this one, on the same context.
		s.sync = sc.open(s.ctx)
		s.pending = s.pendBuf[:0]
		s.queue = func(r *extprocv3.ProcessingResponse) {
			s.pending = append(s.pending, recvItem{resp: r, at: time.Now()})
		}
		return true
	}
	sctx, cancel := context.WithCancel(s.ctx)
	if dc, ok := s.c.cc.(directClient); ok && sctx.Err() == nil {
		// In-process: the pipe takes this context as its own and selects on
		// the pipe itself, one goroutine hop less.
		ds := dc.start(sctx, cancel)
		s.grpc, s.streamCancel, s.direct = ds, cancel, ds.p
		return true
	}
	st, err := s.c.cc.Process(sctx)
	if err != nil {
		cancel()
		s.streamClosed = true
		s.onGrpcError(err)
		return false
	}
	s.grpc, s.streamCancel = st, cancel
	s.recv = make(chan recvItem, 16)
	s.readerDone = make(chan struct{})
	go read(sctx, st, s.recv, s.readerDone)
	return true
}

// directChans are the channels to select on for a Direct stream (nil
// otherwise, which never fires).
func (s *Stream) directChans() (<-chan *extprocv3.ProcessingResponse, <-chan struct{}) {
	if s.direct == nil {
		return nil, nil
	}
	if s.directEnded {
		return s.direct.resps, nil
	}
	return s.direct.resps, s.direct.done
}

// directFinal is the next item once the server returned: the replies it sent
// first, then its status (io.EOF for OK), once.
func (s *Stream) directFinal() recvItem {
	select {
	case r := <-s.direct.resps:
		return recvItem{resp: r}
	default:
	}
	s.directEnded = true
	if s.direct.final == nil {
		return recvItem{err: io.EOF}
	}
	return recvItem{err: s.direct.final}
}

// syncSend hands m to a Sync stream's processor and queues its replies.
// After the processor finished, m goes nowhere (a gRPC Send's io.EOF).
func (s *Stream) syncSend(m *extprocv3.ProcessingRequest) {
	if s.syncEnded {
		return
	}
	if err := s.sync.Handle(m, s.queue); err != nil {
		s.syncEnded = true
		s.pending = append(s.pending, recvItem{err: syncStatus(err), at: time.Now()})
	}
}

// takePending handles the oldest queued item of a Sync stream and reports
// whether there was one. A message timer that expired before the item was
// produced fires first: the processor could not be interrupted, so its
// reply came too late (§4).
func (s *Stream) takePending() bool {
	if len(s.pending) == 0 {
		return false
	}
	if dl, ok := s.nextDeadline(); ok && !s.pending[0].at.Before(dl) {
		s.onTimer()
		if s.complete {
			return true
		}
	}
	it := s.pending[0]
	s.pending[0] = recvItem{}
	s.pending = s.pending[1:]
	if len(s.pending) == 0 {
		s.pending = s.pendBuf[:0]
	}
	s.onRecv(it)
	return true
}

func read(ctx context.Context, st extprocv3.ExternalProcessor_ProcessClient, out chan<- recvItem, done chan<- struct{}) {
	defer close(done)
	for {
		r, err := st.Recv()
		select {
		case out <- recvItem{resp: r, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// closeStream is Envoy's closeStream: half-close then reset (R1.8), or with
// GracefulClose half-close, wait for the server up to RemoteCloseTimeout, then
// reset.
func (s *Stream) closeStream() {
	if s.streamClosed {
		return
	}
	s.streamClosed = true
	if s.sync != nil {
		// Half-close, or reset when the context ended: either way the
		// processor finishes now, as GracefulClose would wait for.
		if !s.syncEnded {
			s.syncEnded = true
			s.sync.Close()
		}
		// Nothing is sent once the stream is closed: its messages go back.
		if s.scratch != nil {
			putScratch(s.scratch)
			s.scratch = nil
		}
		return
	}
	if s.grpc == nil {
		return
	}
	_ = s.grpc.CloseSend()
	if !s.cfg.GracefulClose {
		s.streamCancel()
		return
	}
	done, cancel, wait := s.readerDone, s.streamCancel, s.cfg.RemoteCloseTimeout
	if s.direct != nil {
		done = s.direct.done
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
		}
		cancel()
	}()
}

func (s *Stream) onRecv(it recvItem) {
	if s.complete || s.streamClosed {
		return // Envoy ignores messages once processing is complete
	}
	if it.err != nil {
		if errors.Is(it.err, io.EOF) {
			s.onGrpcClose()
		} else {
			s.onGrpcError(it.err)
		}
		return
	}
	s.onMessage(it.resp)
}

// onGrpcClose: the server returned OK. Processing goes on without it and
// everything held is released unmodified (R1.9).
func (s *Stream) onGrpcClose() {
	s.complete = true
	s.failure = failuref(ErrProcessorClosed, "processor closed the stream with OK")
	s.closeStream()
	s.clearAsyncState()
}

// onGrpcError: the stream could not open or ended with a non-OK status (§4).
func (s *Stream) onGrpcError(err error) {
	st := status.Convert(err)
	f := failuref(ErrGRPC, "ext_proc_error_gRPC_error_%d{%s}", int(st.Code()), st.Message())
	if s.cfg.FailureModeAllow {
		s.complete = true
		s.failure = f
		s.closeStream()
		s.clearAsyncState()
		return
	}
	s.localReply(s.cfg.statusOnError(), nil, nil, failureMsg(f), f)
}

// onTimer fires the message timer that expired (§4, N4.1).
func (s *Stream) onTimer() {
	now := time.Now()
	for _, d := range []*direction{&s.req, &s.resp} {
		if d.timerOn && !now.Before(d.deadline) {
			s.onMessageTimeout()
			return
		}
	}
}

func (s *Stream) onMessageTimeout() {
	f := failuref(ErrMessageTimeout, "ext_proc_error_per-message_timeout_exceeded")
	if s.cfg.FailureModeAllow {
		// Held data is released unmodified.
		s.complete = true
		s.failure = f
		s.closeStream()
		s.clearAsyncState()
		return
	}
	s.localReply(504, nil, nil, failureMsg(f), f)
}

// onMessage is Envoy's onReceiveMessage.
func (s *Stream) onMessage(r *extprocv3.ProcessingResponse) {
	// R2.2: a reply with override_message_timeout only extends the timer.
	if r.GetOverrideMessageTimeout() != nil {
		s.onNewTimeout(r.GetOverrideMessageTimeout())
		return
	}
	// R2.7: mode_override, honoured only while a headers call is outstanding.
	base := s.cfg.mode()
	if r.GetModeOverride() != nil && s.cfg.AllowModeOverride &&
		base.GetRequestBodyMode() != extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED &&
		base.GetResponseBodyMode() != extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED &&
		(s.req.cb == cbHeaders || s.resp.cb == cbHeaders) {
		eff := effectiveModeOverride(r.GetModeOverride(), base)
		// FULL_DUPLEX_STREAMED and GRPC are not modelled: such an override is
		// dropped (documented deviation).
		if s.cfg.overrideAllowed(eff) && supportedBodyMode(eff.GetRequestBodyMode()) && supportedBodyMode(eff.GetResponseBodyMode()) {
			s.req.setMode(eff)
			s.resp.setMode(eff)
		}
	}
	if r.GetResponse() != nil {
		s.setDynamicMetadata(r.GetDynamicMetadata())
	}
	var err error
	lastBody := false
	switch v := r.GetResponse().(type) {
	case *extprocv3.ProcessingResponse_RequestHeaders:
		err = s.req.onHeadersResponse(v.RequestHeaders)
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		err = s.resp.onHeadersResponse(v.ResponseHeaders)
	case *extprocv3.ProcessingResponse_RequestBody:
		lastBody = s.req.isLastBodyResponse()
		err = s.req.onBodyResponse(v.RequestBody)
	case *extprocv3.ProcessingResponse_ResponseBody:
		lastBody = s.resp.isLastBodyResponse()
		err = s.resp.onBodyResponse(v.ResponseBody)
	case *extprocv3.ProcessingResponse_RequestTrailers:
		err = s.req.onTrailersResponse(v.RequestTrailers)
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		err = s.resp.onTrailersResponse(v.ResponseTrailers)
	case *extprocv3.ProcessingResponse_ImmediateResponse:
		if s.cfg.DisableImmediateResponse {
			err = failuref(ErrSpurious, "unhandled immediate response due to config disabled it") // R2.1
			break
		}
		s.onImmediateResponse(v.ImmediateResponse)
		return
	default:
		// R2.1: no oneof (or one Envoy does not handle) is spurious.
		err = failuref(ErrSpurious, "unhandled message")
	}
	if err != nil {
		if errors.Is(err, ErrSpurious) && (s.cfg.FailureModeAllow || !s.cfg.SpuriousFailsClosed) {
			// §4: ignore it and detach the processor.
			s.complete = true
			s.failure = err
			s.closeStream()
			s.clearAsyncState()
			return
		}
		// §4: status_on_error whatever the failure mode.
		var f *failure
		msg := err.Error()
		if errors.As(err, &f) {
			msg = f.msg
		}
		s.localReply(s.cfg.statusOnError(), nil, nil, msg, err)
		return
	}
	s.closeIfLastResponse(r, lastBody)
}

// setDynamicMetadata keeps the receiving namespaces whose value is a Struct
// (R2.6), merging into what earlier replies wrote.
func (s *Stream) setDynamicMetadata(md *structpb.Struct) {
	for ns, v := range md.GetFields() {
		st := v.GetStructValue()
		if st == nil || !slices.Contains(s.cfg.ReceivingNamespaces, ns) {
			continue
		}
		if s.metadata == nil {
			s.metadata = map[string]*structpb.Struct{}
		}
		cur := s.metadata[ns]
		if cur == nil {
			cur = &structpb.Struct{Fields: map[string]*structpb.Value{}}
			s.metadata[ns] = cur
		}
		for k, fv := range st.GetFields() {
			cur.Fields[k] = proto.Clone(fv).(*structpb.Value)
		}
	}
}

func supportedBodyMode(m extprocfilterv3.ProcessingMode_BodySendMode) bool {
	return m != extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED && m != extprocfilterv3.ProcessingMode_GRPC
}

// onNewTimeout applies override_message_timeout (R2.2).
func (s *Stream) onNewTimeout(d *durationpb.Duration) {
	v := d.AsDuration()
	if s.cfg.MaxMessageTimeout == 0 || v < time.Millisecond || v > s.cfg.MaxMessageTimeout {
		return // ignored (override_message_timeout_ignored)
	}
	if !s.req.restartTimer(v) {
		s.resp.restartTimer(v)
	}
}

// onImmediateResponse sends the processor's local reply (R2.8).
func (s *Stream) onImmediateResponse(ir *extprocv3.ImmediateResponse) {
	code := 200
	if ir.GetStatus() != nil && ir.GetStatus().GetCode() >= 200 {
		code = int(ir.GetStatus().GetCode())
	}
	s.localReply(code, ir.GetBody(), ir.GetHeaders(), ir.GetDetails(), nil)
}

// localReply ends processing with a local reply, or a reset when the response
// headers already went downstream (R2.8, N4.3).
func (s *Stream) localReply(code int, body []byte, hm *extprocv3.HeaderMutation, det string, why error) {
	s.complete = true
	s.req.finishCall(cbIdle)
	s.resp.finishCall(cbIdle)
	s.closeStream()
	h := Headers{{":status", strconv.Itoa(code)}}
	if len(body) > 0 {
		h = append(h, Header{"content-length", strconv.Itoa(len(body))}, Header{"content-type", "text/plain"})
	}
	if hm != nil {
		// Checked against the mutation rules; failures are only logged (R2.8).
		_, _ = s.cfg.applyHeaderMutation(&h, hm, mutationOptions{})
	}
	s.outcome = &Result{
		LocalReply: &LocalReply{Status: code, Headers: h, Body: bytes.Clone(body), Details: details(det)},
		Reset:      s.downstreamStarted,
		Failure:    why,
	}
}

// tooLarge is the filter manager's buffer-limit reply (R1.5b).
func (s *Stream) tooLarge(d *direction) {
	if d.request {
		s.localReply(413, []byte("Payload Too Large"), nil, "request_payload_too_large",
			failuref(ErrBufferLimit, "request body above %d bytes", d.limit()))
		return
	}
	s.localReply(500, []byte("Internal Server Error"), nil, "response_payload_too_large",
		failuref(ErrBufferLimit, "response body above %d bytes", d.limit()))
}

// clearAsyncState releases everything held, unmodified, in both directions.
func (s *Stream) clearAsyncState() {
	for _, d := range []*direction{&s.req, &s.resp} {
		d.finishCall(cbIdle)
		for _, c := range d.queue {
			d.out = append(d.out, c.data...)
		}
		d.queue = nil
		if d.started {
			d.continueProcessing()
		}
	}
}

// closeIfLastResponse is the stream-close optimization (R1.8a).
func (s *Stream) closeIfLastResponse(r *extprocv3.ProcessingResponse, lastBody bool) {
	if !s.cfg.StreamCloseOptimization || s.streamClosed || s.complete {
		return
	}
	last := false
	req, resp := &s.req, &s.resp
	switch r.GetResponse().(type) {
	case *extprocv3.ProcessingResponse_RequestHeaders:
		last = (req.noBody || (req.bodyMode == extprocfilterv3.ProcessingMode_NONE && !req.sendTrailers)) && resp.noExternalProcess()
	case *extprocv3.ProcessingResponse_RequestBody:
		last = lastBody && resp.noExternalProcess()
	case *extprocv3.ProcessingResponse_RequestTrailers:
		last = resp.noExternalProcess()
	case *extprocv3.ProcessingResponse_ResponseHeaders:
		last = resp.noBody || (resp.bodyMode == extprocfilterv3.ProcessingMode_NONE && !resp.sendTrailers)
	case *extprocv3.ProcessingResponse_ResponseBody:
		last = lastBody
	case *extprocv3.ProcessingResponse_ResponseTrailers:
		last = true
	}
	if last {
		s.closeStream()
	}
}

func (d *direction) name() string {
	if d.request {
		return "request"
	}
	return "response"
}

func (d *direction) setMode(m *extprocfilterv3.ProcessingMode) {
	if d.request {
		d.sendHeaders = m.GetRequestHeaderMode() != extprocfilterv3.ProcessingMode_SKIP
		d.sendTrailers = m.GetRequestTrailerMode() == extprocfilterv3.ProcessingMode_SEND
		d.bodyMode = m.GetRequestBodyMode()
		return
	}
	d.sendHeaders = m.GetResponseHeaderMode() != extprocfilterv3.ProcessingMode_SKIP
	d.sendTrailers = m.GetResponseTrailerMode() == extprocfilterv3.ProcessingMode_SEND
	d.bodyMode = m.GetResponseBodyMode()
}

func (d *direction) noExternalProcess() bool {
	return !d.sendHeaders && d.bodyMode == extprocfilterv3.ProcessingMode_NONE && !d.sendTrailers
}

func (d *direction) limit() int {
	if d.request {
		return d.s.cfg.RequestBufferLimit
	}
	return d.s.cfg.ResponseBufferLimit
}

func (d *direction) startCall(cb callback) {
	d.cb = cb
	d.timerOn = true
	d.deadline = time.Now().Add(d.s.cfg.MessageTimeout)
	d.newTimeoutReceived = false
}

// finishCall stops the timer and moves to the next state; STREAMED keeps its
// state while chunks are outstanding but its timer stops until the next send,
// as in Envoy.
func (d *direction) finishCall(next callback) {
	d.timerOn = false
	d.cb = next
	d.newTimeoutReceived = false
}

func (d *direction) restartTimer(v time.Duration) bool {
	if !d.timerOn || d.newTimeoutReceived {
		return false
	}
	d.deadline = time.Now().Add(v)
	d.newTimeoutReceived = true
	return true
}

func (d *direction) headersMsg(eos bool) *extprocv3.ProcessingRequest {
	if sc := d.s.scratch; sc != nil {
		return sc.headers(d.request, d.held, eos)
	}
	hh := &extprocv3.HttpHeaders{Headers: d.held.toProto(), EndOfStream: eos}
	if d.request {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: hh}}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: hh}}
}

func (d *direction) bodyMsg(data []byte, eos bool) *extprocv3.ProcessingRequest {
	if sc := d.s.scratch; sc != nil {
		return sc.bodyChunk(d.request, data, eos)
	}
	b := &extprocv3.HttpBody{Body: data, EndOfStream: eos}
	if d.request {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: b}}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: b}}
}

func (d *direction) trailersMsg() *extprocv3.ProcessingRequest {
	if sc := d.s.scratch; sc != nil {
		return sc.trailers(d.request, d.trailers)
	}
	t := &extprocv3.HttpTrailers{Trailers: d.trailers.toProto()}
	if d.request {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestTrailers{RequestTrailers: t}}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{ResponseTrailers: t}}
}

// sendBuffered sends the whole buffered body (R1.5b, R1.5d); the processor
// gets its own copy, unless it is a Sync stream's (which reads it only
// while handling it).
func (d *direction) sendBuffered(cb callback, eos bool) {
	d.bodySent = true
	d.s.send(d, d.bodyMsg(d.s.processorCopy(d.buf), eos), cb)
}

// processorCopy is data as a message may carry it: a copy the processor may
// keep, or data itself for a Sync stream's processor, which keeps nothing
// of a message and never writes into it.
func (s *Stream) processorCopy(data []byte) []byte {
	if s.scratch != nil {
		return data
	}
	return bytes.Clone(data)
}

// releaseHeaders lets the held headers go on, without content-length in the
// modes that strip it (R2.10).
func (d *direction) releaseHeaders() {
	h := d.held
	if h == nil {
		h = Headers{}
	}
	if d.stripCL {
		h.Del("content-length")
	}
	d.outHeaders = h
	d.held = nil
	d.holding = false
	if !d.request {
		d.s.downstreamStarted = true
	}
}

// continueProcessing is continueIfNecessary: release held headers, buffered
// data and trailers.
func (d *direction) continueProcessing() {
	if d.holding {
		d.releaseHeaders()
	}
	switch {
	case len(d.out) == 0:
		d.out = d.buf // the processor got a copy: d.buf is the filter's own
	case len(d.buf) > 0:
		d.out = append(d.out, d.buf...)
	}
	d.buf = nil
	d.buffering = false
	if d.trailersHeld && d.cb == cbIdle {
		d.outTrailers = d.trailers
		d.trailers = nil
		d.trailersHeld = false
	}
}

func (d *direction) mutateHeld(hm *extprocv3.HeaderMutation, replacing bool) error {
	_, err := d.s.cfg.applyHeaderMutation(&d.held, hm, mutationOptions{replacing: replacing, stripCL: d.stripCL})
	return err
}

// clearRouteCache applies R3.2: request direction, a header_mutation present,
// then route_cache_action.
func (d *direction) clearRouteCache(cr *extprocv3.CommonResponse) {
	if !d.request || cr.GetHeaderMutation() == nil {
		return
	}
	switch d.s.cfg.RouteCacheAction {
	case extprocfilterv3.ExternalProcessor_DEFAULT:
		if cr.GetClearRouteCache() {
			d.clearRoute = true
		}
	case extprocfilterv3.ExternalProcessor_CLEAR:
		d.clearRoute = true
	case extprocfilterv3.ExternalProcessor_RETAIN:
	}
}

func (d *direction) onHeadersResponse(hr *extprocv3.HeadersResponse) error {
	if d.cb != cbHeaders {
		return failuref(ErrSpurious, "spurious message")
	}
	cr := hr.GetResponse()
	replacing := cr.GetStatus() == extprocv3.CommonResponse_CONTINUE_AND_REPLACE
	if cr.GetHeaderMutation() != nil {
		if err := d.mutateHeld(cr.GetHeaderMutation(), replacing); err != nil {
			return err
		}
	}
	d.clearRouteCache(cr)
	d.finishCall(cbIdle)
	if replacing {
		// R2.3: the body mutation replaces the whole body; no more body or
		// trailer messages in this direction.
		if bm := cr.GetBodyMutation(); bm != nil {
			d.held.Del("content-length")
			d.bodyReplaced = true
			d.buf = applyBodyMutation(bm, d.buf)
			if len(d.buf) == 0 {
				d.buf = nil
			}
		}
		d.queue = nil
		d.bodyMode = extprocfilterv3.ProcessingMode_NONE
		d.sendTrailers = false
		d.continueProcessing()
		return nil
	}
	if !d.noBody && (d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED || d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL) {
		return nil // R1.5b: the headers are held until the body reply
	}
	d.continueProcessing()
	return nil
}

func (d *direction) isLastBodyResponse() bool {
	return d.bodyMode == extprocfilterv3.ProcessingMode_STREAMED && len(d.queue) > 0 && d.queue[0].eos
}

func (d *direction) onBodyResponse(br *extprocv3.BodyResponse) error {
	cr := br.GetResponse()
	bm := cr.GetBodyMutation()
	switch d.cb {
	case cbBufferedBody, cbPartialBody:
		// R2.4: header_mutation applies while the headers are held.
		if cr.GetHeaderMutation() != nil && d.holding {
			if err := d.mutateHeld(cr.GetHeaderMutation(), cr.GetStatus() == extprocv3.CommonResponse_CONTINUE_AND_REPLACE); err != nil {
				return err
			}
		}
		if bm != nil {
			if d.cb == cbBufferedBody && d.holding {
				// R2.10: content-length must match the mutated body.
				if v, ok := d.held.Get("content-length"); ok {
					if n, err := strconv.ParseUint(v, 10, 64); err == nil && n != uint64(len(bm.GetBody())) {
						return failuref(ErrContentLengthMismatch, "mismatch between content length and the length of the mutated body")
					}
				}
			}
			d.buf = applyBodyMutation(bm, d.buf)
		}
		if d.cb == cbPartialBody {
			d.partialDone = true
		}
		d.finishCall(cbIdle)
		d.clearRouteCache(cr)
		d.finalizeBody(true)
		return nil
	case cbStreamedBody:
		if bm.GetStreamedResponse() != nil {
			return failuref(ErrSpurious, "spurious message: streamed_response is received while body_mode_ is not FULL_DUPLEX_STREAMED")
		}
		head := d.queue[0]
		d.queue = d.queue[1:]
		data := head.data
		if bm != nil {
			data = applyBodyMutation(bm, data) // R2.5, per chunk; header_mutation ignored (R2.4)
		}
		d.out = append(d.out, data...)
		next := cbIdle
		if len(d.queue) > 0 {
			next = cbStreamedBody
		}
		d.finishCall(next)
		d.clearRouteCache(cr)
		d.finalizeBody(head.eos)
		return nil
	default:
		return failuref(ErrSpurious, "spurious message")
	}
}

// finalizeBody is Envoy's finalizeBodyResponse: send the trailers once every
// body reply is in (R1.6), or continue.
func (d *direction) finalizeBody(shouldContinue bool) {
	if d.sendTrailers && d.trailersHeld && len(d.queue) == 0 && !d.bodyReplaced {
		d.s.send(d, d.trailersMsg(), cbTrailers)
		return
	}
	if shouldContinue || (d.trailersHeld && len(d.queue) == 0) {
		d.continueProcessing()
	}
}

func (d *direction) onTrailersResponse(tr *extprocv3.TrailersResponse) error {
	if d.cb != cbTrailers {
		return failuref(ErrSpurious, "spurious message")
	}
	if hm := tr.GetHeaderMutation(); hm != nil {
		if _, err := d.s.cfg.applyHeaderMutation(&d.trailers, hm, mutationOptions{}); err != nil {
			return err
		}
	}
	d.finishCall(cbIdle)
	d.continueProcessing()
	return nil
}

// applyBodyMutation applies a body or clear_body mutation; body "" has the
// same effect as clear_body (R2.5).
func applyBodyMutation(bm *extprocv3.BodyMutation, data []byte) []byte {
	switch m := bm.GetMutation().(type) {
	case *extprocv3.BodyMutation_Body:
		return bytes.Clone(m.Body)
	case *extprocv3.BodyMutation_ClearBody:
		if m.ClearBody {
			return []byte{}
		}
	}
	return data
}
