package extproc

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

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

// codeUpstreamReset is the error code of the event that ends a cut stream.
const codeUpstreamReset = "upstream_reset"

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
	ev := s.cutEvent()
	if ev == nil {
		return replyContinueResponseBody
	}
	if s.p.debug {
		s.p.log.Debug("stream cut by the upstream", "request_id", s.id, "details", details)
	}
	return s.newChunkReply(ev)
}

// cutEvent is the SSE event that tells the client its stream broke off, in
// the shape its API streams errors: OpenAI chat and completions a data line
// with {"error":{…}}, the Responses API an "error" event, Anthropic an
// "event: error" with its error envelope, the Gemini API (alt=sse) a data
// line with Google's {"error":{…}}. nil for a Gemini JSON-array stream.
func (s *stream) cutEvent() []byte {
	return s.errorEvent(&translate.APIError{
		Status: http.StatusBadGateway, Type: translate.TypeServer, Code: codeUpstreamReset,
		Message: "the provider's stream was cut before its end; the reply is incomplete",
	})
}

// errorEvent is e as the SSE event that ends a stream in the client's API
// (see cutEvent).
func (s *stream) errorEvent(e *translate.APIError) []byte {
	switch s.in.API {
	case translate.APIResponses:
		ev := struct {
			Type    string  `json:"type"`
			Code    string  `json:"code"`
			Message string  `json:"message"`
			Param   *string `json:"param"`
			Seq     *int64  `json:"sequence_number,omitempty"`
		}{Type: "error", Code: e.Code, Message: e.Message}
		if sq, ok := s.tr.(translate.Sequencer); ok {
			if n, ok := sq.NextSequence(); ok {
				ev.Seq = &n
			}
		}
		b, _ := json.Marshal(ev) // strings and ints only
		return translate.AppendSSEEvent(nil, "error", b)
	case translate.APIMessages:
		return translate.AppendSSEEvent(nil, "error", translate.AnthropicErrorBody(e))
	case translate.APIGeminiGenerate:
		if !strings.Contains(s.in.Path, "alt=sse") {
			return nil
		}
		return translate.AppendSSEEvent(nil, "", translate.GeminiErrorBody(e))
	default:
		return translate.AppendSSEEvent(nil, "", e.OpenAIBody())
	}
}

// A provider that refuses the gateway's credential (401, or 403 that is not
// a content-policy refusal) is the gateway's fault, not the client's: the
// client's key is fine. Passing the provider's 401 on would make SDKs report
// the client's own key as bad (and some stop retrying for good). The client
// gets 502 with type and code upstream_auth_error and a message naming the
// deployment (its id, which x-tollgate-deployment already shows; never the
// credential). For routing, it is a failed attempt like a 5xx: it is retried
// on another deployment of the group, or a fallback group, when there is one
// (classify), and a 401 counts towards the deployment's cooldown (allowed
// fails; Router.observe sees only the status, and a 403 may be a
// content-policy refusal).

// Error type and code of a provider refusing the gateway's credential.
const typeUpstreamAuth = "upstream_auth_error"

// upstreamAuthFailure reports whether an attempt's status says the provider
// refused the gateway's credential.
func upstreamAuthFailure(status int, body []byte) bool {
	return status == http.StatusUnauthorized ||
		status == http.StatusForbidden && routing.Classify(status, body) != routing.FailContentPolicy
}

// upstreamError is the client's error body for a failed attempt that
// answered s.status with body, and the status the client gets (0: the
// provider's).
func (s *stream) upstreamError(body []byte) ([]byte, int) {
	if !upstreamAuthFailure(s.status, body) {
		return s.tr.Error(s.status, body), 0
	}
	e := &translate.APIError{
		Status: http.StatusBadGateway, Type: typeUpstreamAuth, Code: typeUpstreamAuth,
		Message: "The provider of deployment `" + s.target.Deployment + "` rejected the gateway's credentials (HTTP " +
			strconv.Itoa(s.status) + "). Your API key is fine; the gateway's operator must fix this deployment's credential.",
	}
	return s.ep.errorBody(e), http.StatusBadGateway
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
	if !upstreamAuthFailure(s.status, nil) {
		return l
	}
	out, status := s.upstreamError(nil)
	x.c.Status = extprocv3.CommonResponse_CONTINUE_AND_REPLACE
	x.c.BodyMutation = x.mutation(out)
	l = l.addInt(":status", int64(status))
	return l.add(hdrContentType, "application/json")
}

// signOutbound adds the signer's headers to out (its body, else the client's).
func (s *stream) signOutbound(ctx context.Context, out *translate.Outbound) error {
	body := out.Body
	if body == nil {
		body = s.in.Body
	}
	path := out.Path
	if path == "" {
		path = s.path
	}
	h, err := s.target.Signer.SignRequest(ctx, &translate.UpstreamRequest{Method: s.method, Host: s.target.Host, Path: path, Body: body})
	if err != nil {
		return err
	}
	out.Headers = append(out.Headers, h...)
	return nil
}

// unpricedError is the refusal of a model without a price under a strict
// budget (kernel.ReasonUnpriced), before any provider call: HTTP 400 (a retry
// cannot help, an operator must act), type invalid_request_error, code
// model_price_missing, naming the model the price is missing for and the
// scope whose budget could not be enforced. The endpoint renders it in its
// API's error shape (OpenAI, Anthropic, Gemini).
func unpricedError(t *translate.Target, d kernel.Decision) *translate.APIError {
	return unpricedUnitError(t, d, nil)
}

// unpricedUnitError is unpricedError for a request of a route charged per
// unit (u, nil on token routes): the message names the unit the price is
// missing in and the `tollgate price set` flag that sets it, ready to run
// with a price in place of DOLLARS.
func unpricedUnitError(t *translate.Target, d kernel.Decision, u *translate.UnitRequest) *translate.APIError {
	name := t.ProviderModel
	if name == "" {
		name = t.Model
	}
	what := fmt.Sprintf("The model `%s`", name)
	if t.Model != "" && t.Model != name {
		what = fmt.Sprintf("The model `%s` (served as `%s`)", t.Model, name)
	}
	missing, cmd := "", name+" …"
	if per, flag := unitPriceFlag(u); flag != "" {
		missing, cmd = " "+per, name+" "+flag+" DOLLARS"
	}
	msg := fmt.Sprintf("%s has no price%s, so the %s's budget cannot be enforced: the gateway refuses it "+
		"rather than charge $0. An operator must set its price (tollgate price set %s) or declare "+
		"the deployment free (--free).", what, missing, d.Scope.Noun(), cmd)
	return &translate.APIError{
		Status: http.StatusBadRequest, Type: translate.TypeInvalidRequest, Code: translate.CodeModelUnpriced, Param: "model",
		Message: msg,
	}
}
