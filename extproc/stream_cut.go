package extproc

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
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
