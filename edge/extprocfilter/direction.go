package extprocfilter

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

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
	sizeHint     int    // the body's content-length, 0 if unknown (buffer.go)
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
	d.noteSize(d.held)
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
		return nil, errBodyOutOfOrder(d)
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
	case d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED && eos && d.buf == nil && len(data) <= d.limit():
		// The whole body in one chunk: buffered without a copy (buffer.go).
		d.buf, d.buffering = data, true
		d.sendBuffered(cbBufferedBody, true)
		s.waitFor(func() bool { return d.cb == cbIdle })
		d.unborrow(data)
	case d.bodyMode == extprocfilterv3.ProcessingMode_BUFFERED:
		d.bufferChunk(data)
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
		s.partialBody(d, data, eos)
	case d.bodyMode == extprocfilterv3.ProcessingMode_STREAMED:
		s.streamedBody(d, data, eos)
	}
	return s.result(d)
}

// onBody's other modes are out of line: a buffered body's reply is applied
// under onBody's frame, at the deepest point of a request's goroutine (see
// applyHeaderMutation).

// partialBody buffers a BUFFERED_PARTIAL chunk, sent at end of stream or
// when the limit is reached (R1.5d).
//
//go:noinline
func (s *Stream) partialBody(d *direction, data []byte, eos bool) {
	d.bufferChunk(data)
	d.buffering = true
	if eos || len(d.buf) >= d.limit() {
		d.sendBuffered(cbPartialBody, eos)
		s.waitFor(func() bool { return d.cb == cbIdle })
	}
}

// streamedBody sends a STREAMED chunk: one message per chunk, replies
// consumed in FIFO order (R1.5c).
//
//go:noinline
func (s *Stream) streamedBody(d *direction, data []byte, eos bool) {
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

//go:noinline
func errBodyOutOfOrder(d *direction) error {
	return fmt.Errorf("%w: %s body without headers or after its end", ErrOutOfOrder, d.name())
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
	if d.s.inCall {
		return d.s.msgScratch().headers(d.request, d.held, eos)
	}
	hh := &extprocv3.HttpHeaders{Headers: d.held.toProto(), EndOfStream: eos}
	if d.request {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: hh}}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{ResponseHeaders: hh}}
}

func (d *direction) bodyMsg(data []byte, eos bool) *extprocv3.ProcessingRequest {
	if d.s.inCall {
		return d.s.msgScratch().bodyChunk(d.request, data, eos)
	}
	b := &extprocv3.HttpBody{Body: data, EndOfStream: eos}
	if d.request {
		return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: b}}
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: b}}
}

func (d *direction) trailersMsg() *extprocv3.ProcessingRequest {
	if d.s.inCall {
		return d.s.msgScratch().trailers(d.request, d.trailers)
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
	if s.inCall {
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
		return ownedBody(m.Body)
	case *extprocv3.BodyMutation_ClearBody:
		if m.ClearBody {
			return []byte{}
		}
	}
	return data
}
