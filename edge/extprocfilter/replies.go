package extprocfilter

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"time"

	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

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
	if !s.req.timerOn && !s.resp.timerOn {
		// No message outstanding: nothing to fire, and no clock to read
		// (drain looks at every call; over Sync the timers are off by then).
		return
	}
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
	if r.GetModeOverride() != nil {
		s.onModeOverride(r.GetModeOverride())
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
		s.onReplyError(err)
		return
	}
	s.closeIfLastResponse(r, lastBody)
}

// onMessage's rare paths are out of line: it runs at the deepest point of a
// request's goroutine, and its frame with them inlined was 528 bytes (see
// applyHeaderMutation).

// onModeOverride applies a reply's mode_override (R2.7), honoured only while
// a headers call is outstanding.
//
//go:noinline
func (s *Stream) onModeOverride(mo *extprocfilterv3.ProcessingMode) {
	base := s.cfg.mode()
	if !s.cfg.AllowModeOverride ||
		base.GetRequestBodyMode() == extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED ||
		base.GetResponseBodyMode() == extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED ||
		(s.req.cb != cbHeaders && s.resp.cb != cbHeaders) {
		return
	}
	eff := effectiveModeOverride(mo, base)
	// FULL_DUPLEX_STREAMED and GRPC are not modelled: such an override is
	// dropped (documented deviation).
	if s.cfg.overrideAllowed(eff) && supportedBodyMode(eff.GetRequestBodyMode()) && supportedBodyMode(eff.GetResponseBodyMode()) {
		s.req.setMode(eff)
		s.resp.setMode(eff)
	}
}

// onReplyError ends the stream after a reply that could not be applied.
//
//go:noinline
func (s *Stream) onReplyError(err error) {
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
