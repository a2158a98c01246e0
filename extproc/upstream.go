package extproc

import (
	"context"
	"net/http"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// A stream cut mid-way.
//
// When the provider resets a stream whose headers already went to the
// client, Envoy resets the client's stream too (HTTP/1.1: the connection
// closes before the terminating chunk; HTTP/2: RST_STREAM) and the ext_proc
// stream just ends: nothing more can be written (docs/envoy.md). The
// built-in data plane instead sends one last, empty response body message
// with end_of_stream and the attribute response.code_details (Envoy's
// attribute, with Envoy's value: upstream_reset_after_response_started{…});
// the processor answers with an error event in the client's format, which the
// data plane writes before it ends the response cleanly (docs/extproc.md,
// "A stream cut mid-way"). The request is settled as aborted with the usage
// the stream showed, as any abort.

// attrCodeDetails is Envoy's attribute for why a response ended the way it did.
const attrCodeDetails = "response.code_details"

// cutDetails is the response.code_details a body message carries: set only
// on the last message of a stream the upstream cut ("" otherwise).
func cutDetails(req *extprocv3.ProcessingRequest) string {
	a := req.GetAttributes()
	if a == nil {
		return ""
	}
	return a[envoy.ExtProcFilter].GetFields()[attrCodeDetails].GetStringValue()
}

// responseCut ends a stream the upstream cut: settled as aborted with what it
// showed, and answered with the client's error event (nothing when the
// response is not an event stream the gateway understands).
func (s *stream) responseCut(ctx context.Context, b *extprocv3.HttpBody, details string) *extprocv3.ProcessingResponse {
	if !s.admitted || !s.sse || s.settled {
		return s.responseBody(ctx, b)
	}
	u, reported := s.tr.StreamUsage()
	s.settle(ctx, kernel.StatusAborted, s.status, u, reported)
	ev := translate.ErrorEvent(s.in.API, s.in.Path, s.tr, translate.ErrStreamCut())
	if ev == nil {
		return replyContinueResponseBody
	}
	if s.p.debug {
		s.p.log.Debug("stream cut by the upstream", "request_id", s.id, "details", details)
	}
	return s.newChunkReply(ev)
}

// upstreamError is the client's error body for a failed attempt that
// answered s.status with body, and the status the client gets (0: the
// provider's).
func (s *stream) upstreamError(body []byte) ([]byte, int) {
	if !routing.AuthFailure(s.status, body) {
		return s.tr.Error(s.status, body), 0
	}
	return s.ep.errorBody(translate.ErrUpstreamAuth(s.target.Deployment, s.status)), http.StatusBadGateway
}

// upstreamAuthNoBody turns a provider's 401/403 that has no body at all (its
// response headers end the stream: content-length 0, or an HTTP/2 HEADERS
// frame with END_STREAM) into the same 502 as one with a body: the reply to
// the response headers sets :status and content-type and adds the error body
// with CONTINUE_AND_REPLACE, which gives a message that had none a body
// (docs/extproc.md R2.3; Envoy buffers it and releases the headers without
// end of stream). Not an immediate response: in a per-try upstream filter a
// local reply is not retried, while a 502 is in the route's
// retriable_status_codes. x's other mutations and l's headers stay.
func (s *stream) upstreamAuthNoBody(x *replyParts, l headerList) headerList {
	if !routing.AuthFailure(s.status, nil) {
		return l
	}
	out, status := s.upstreamError(nil)
	x.c.Status = extprocv3.CommonResponse_CONTINUE_AND_REPLACE
	x.c.BodyMutation = x.mutation(out)
	l = l.addInt(":status", int64(status))
	return l.add(hdrContentType, "application/json")
}
