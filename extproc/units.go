package extproc

import (
	"fmt"
	"net/http"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// The routes charged per unit (#34): images, audio, moderations and rerank.
// Each is an endpoint like chat's — authenticated, resolved, admitted,
// forwarded and settled by the same pipeline — whose request counts units
// (translate.UnitRequest) priced from the model's price table entry
// (kernel.UnitPrices): the request is admitted as Usage{Input: bound} at
// kernel.PerUnit(price of one unit) and settled at the units the reply
// reports, so the kernel's reservation and cost arithmetic hold unchanged.
// The ledger row records the unit and the quantity.

// priceUnits prices the admission of a unit request on the deployment
// whose price areq.Price holds (translate.UnitRequest.PriceAdmission): the
// processor calls it for its target, and the router (routing.go) again for
// each candidate it admits on. Token routes (no unit request) are left as
// they are.
func (s *stream) priceUnits(areq *kernel.AdmitRequest) {
	if s.in != nil && s.in.Unit != nil {
		s.in.Unit.PriceAdmission(areq)
	}
}

// recordUnits sets the unit and quantity of a settled unit request (and of
// a pass-through call priced per call) in its ledger record.
func (s *stream) recordUnits(rec *Record) {
	if pt, ok := s.tr.(*translate.Passthrough); ok && pt.PerCall {
		rec.Unit, rec.Quantity = kernel.UnitCalls, rec.Usage.Input
		return
	}
	if s.in == nil || s.in.Unit == nil {
		return
	}
	if s.in.Unit.Unit == kernel.UnitTokens {
		rec.Unpriced = rec.Unpriced || s.in.Unit.Unpriced
		return
	}
	if s.in.Unit.ByTokens { // the usage is tokens; the quantity the images served
		rec.Unit, rec.Quantity = kernel.UnitImages, s.in.Unit.Images
		return
	}
	rec.Unit, rec.Quantity = s.in.Unit.Unit, rec.Usage.Input
	rec.Unpriced = rec.Unpriced || s.in.Unit.Unpriced
}

// unitEstimate is what a unit request is charged when its reply said
// nothing (an abnormal end): the bound it reserved; ok is false on token
// routes.
func (s *stream) unitEstimate() (int64, bool) {
	if s.in == nil || s.in.Unit == nil || s.in.Unit.Unit == kernel.UnitTokens || s.in.Unit.ByTokens {
		return 0, false
	}
	return s.in.Unit.Bound, true
}

// unitClamped reports whether the kernel admitted an image request billed
// by tokens for fewer output tokens than its images may cost (a budget's
// clamp): unlike chat's, an image's output cannot be cut to the bound (no
// max_tokens), so the request is refused as over budget instead.
func (s *stream) unitClamped(d kernel.Decision) bool {
	return d.Clamped && s.in != nil && s.in.Unit != nil && s.in.Unit.ByTokens
}

// unpricedError is the refusal of the stream's request for a missing price,
// naming the unit of a unit request.
func (s *stream) unpricedError(d kernel.Decision) *translate.APIError {
	var u *translate.UnitRequest
	if s.in != nil {
		u = s.in.Unit
	}
	return translate.ErrUnpriced(s.target, d, u)
}

// hasPrefixFold is strings.HasPrefix, ASCII case-insensitive.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// unitState is what a multipart unit request keeps of its headers.
type unitState struct {
	contentType   string
	contentLength int64 // -1: none (chunked)
}

// modePartial has the request body sent BUFFERED_PARTIAL: its first bytes,
// up to the data plane's buffer limit (--max-body-bytes), with the headers
// held; the rest then flows to the provider unprocessed, never held whole
// (R1.5d). The response body stays BUFFERED (R2.7: body modes are literal).
var modePartial = &extprocfilterv3.ProcessingMode{
	RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL,
	ResponseBodyMode: extprocfilterv3.ProcessingMode_BUFFERED,
}

// multipartHeaders checks a multipart upload's content type and asks for
// its first bytes only.
func (s *stream) multipartHeaders(h *extprocv3.HttpHeaders, contentLength *corev3.HeaderValue) *extprocv3.ProcessingResponse {
	if h.GetEndOfStream() {
		return s.reject(translate.ErrInvalidRequest("The request has no body: send a multipart/form-data form.", ""))
	}
	for _, hv := range h.GetHeaders().GetHeaders() {
		if hv.GetKey() == hdrContentType {
			s.units.contentType = headerValue(hv)
		}
	}
	if translate.MultipartBoundary(s.units.contentType) == "" {
		return s.reject(&translate.APIError{
			Status: http.StatusBadRequest, Type: translate.TypeInvalidRequest, Code: "invalid_content_type",
			Message: fmt.Sprintf("%s takes a multipart/form-data body with a boundary; the content type was %q.", s.ep.Path, s.units.contentType),
		})
	}
	s.units.contentLength = -1
	if n, err := headerInt(contentLength); err == nil {
		s.units.contentLength = n
	}
	return &extprocv3.ProcessingResponse{
		Response:     &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}},
		ModeOverride: modePartial,
	}
}

// parseBody parses the request body: the endpoint's parser, or a multipart
// form of which body holds the first bytes unless complete.
func (s *stream) parseBody(body []byte, complete bool) (*translate.Inbound, error) {
	if !s.ep.Multipart {
		return s.ep.parse(s.path, body, &s.parsed)
	}
	if s.units.contentLength >= 0 && int64(len(body)) >= s.units.contentLength {
		complete = true
	}
	in, err := translate.ParseMultipartUnits(s.ep.API, s.units.contentType, body, complete, s.units.contentLength)
	if err != nil {
		return nil, err
	}
	in.Unit.Partial = !complete
	return in, nil
}
