package extproc

import (
	"context"
	"net/http"
	"slices"
	"strings"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// Pass-through routes (#34): /passthrough/PROVIDER_ID/REST forwards REST
// (query included), the body and the reply unchanged to the provider's base
// URL with the provider's credential, after the key is authenticated, the
// path checked against the key's and team's grants, and the request admitted
// by the kernel like any other; the reply's usage (where its shape is known)
// or the provider's price per call settles it.

// PassthroughPrefix is the path prefix of the pass-through routes.
const PassthroughPrefix = translate.PassthroughPrefix

// Errors of a PassthroughCatalog (translate.ErrPassthrough renders them).
var (
	ErrPassthroughDenied      = translate.ErrPassthroughDenied      // 403
	ErrProviderNotFound       = translate.ErrProviderNotFound       // 404
	ErrPassthroughUnsupported = translate.ErrPassthroughUnsupported // 400
)

// PassthroughCatalog is implemented by catalogs that serve pass-through
// routes; with a Catalog that does not, they are 404s.
type PassthroughCatalog interface {
	// PassthroughGranted reports (nil) whether the key may call path (query
	// excluded, below the provider's base) of the provider: ErrProviderNotFound
	// or ErrPassthroughDenied otherwise.
	PassthroughGranted(ctx context.Context, p *Principal, provider, path string) error
	// PassthroughTarget is the provider's synthetic deployment priced for
	// model ("" when the request names none). perCall: the price is the
	// provider's price per call (the model is unknown or has no price);
	// otherwise Price is the model's token price, or Unpriced.
	PassthroughTarget(ctx context.Context, p *Principal, provider, model string) (t *Target, perCall bool, err error)
}

// passthroughHeaders checks the grant at request headers; a request without
// a body (GET, DELETE) is admitted and forwarded now.
func (s *stream) passthroughHeaders(ctx context.Context, endOfStream bool, contentLength int64) *extprocv3.ProcessingResponse {
	pc, ok := s.p.cat.(PassthroughCatalog)
	if !ok {
		return s.reject(&translate.APIError{
			Status: http.StatusNotFound, Type: translate.TypeInvalidRequest, Code: translate.CodeUnknownURL,
			Message: "Pass-through routes are not served by this gateway.",
		})
	}
	provider, rest := translate.PassthroughSplit(s.path)
	restPath, _, _ := strings.Cut(rest, "?")
	if !translate.CleanPassthroughPath(restPath) {
		return s.reject(translate.ErrInvalidRequest(
			"A pass-through path may not hold dot segments, empty segments, backslashes or encoded dots, slashes or backslashes.", ""))
	}
	if err := pc.PassthroughGranted(ctx, s.principal, provider, restPath); err != nil {
		return s.reject(translate.ErrPassthrough(provider, restPath, err))
	}
	if endOfStream {
		return s.passthroughForward(ctx, pc, nil)
	}
	if contentLength > int64(s.p.maxBody) {
		return s.reject(translate.ErrTooLarge(s.p.maxBody))
	}
	return replyContinueRequestHeaders
}

// passthroughBody admits and forwards a request with a body.
func (s *stream) passthroughBody(ctx context.Context, body []byte) *extprocv3.ProcessingResponse {
	pc, _ := s.p.cat.(PassthroughCatalog) // checked at request headers
	return s.passthroughForward(ctx, pc, body)
}

// passthroughForward admits the request and sends it to the provider's
// synthetic deployment.
func (s *stream) passthroughForward(ctx context.Context, pc PassthroughCatalog, body []byte) *extprocv3.ProcessingResponse {
	provider, rest := translate.PassthroughSplit(s.path)
	if s.googleKey { // the virtual key came as ?key=: not the provider's
		rest = routing.WithoutQueryKey(rest)
	}
	model := translate.PassthroughModel(rest, body)
	target, perCall, err := pc.PassthroughTarget(ctx, s.principal, provider, model)
	if err != nil || target == nil {
		return s.reject(translate.ErrPassthrough(provider, rest, err))
	}
	s.target = target
	s.in = &translate.Inbound{API: translate.APIPassthrough, Body: body, Model: target.Model, RequestID: s.id}
	s.tr = &translate.Passthrough{Rest: rest, PerCall: perCall}
	s.promptBytes = int64(len(body))

	scopes := s.principal.Scopes
	if s.customerHdr != "" {
		if cs, ok := s.p.cat.Customer(ctx, s.customerHdr); ok {
			s.customer = s.customerHdr
			scopes = append(slices.Clip(scopes), cs)
		}
	}
	areq := &s.areq
	*areq = kernel.AdmitRequest{
		ID: s.id, Scopes: scopes, Model: target.Model, PromptBytes: s.promptBytes,
		DefaultMaxTokens: target.DefaultMaxTokens, Price: target.Price,
	}
	if perCall { // one unit of input at the price of a call
		areq.PromptBytes, areq.MaxTokens, areq.DefaultMaxTokens = 1, 0, 1
	}
	s.mark(&s.report.AdmitStart)
	d, err := s.admit(ctx) // s.areq
	if err != nil {
		s.p.log.Warn("admit failed", "request_id", s.id, "err", err)
		return s.reject(translate.ErrUnavailable())
	}
	if !d.Admitted {
		if d.Reason == kernel.ReasonUnpriced {
			return s.reject(translate.ErrPassthroughUnpriced(provider, target, d))
		}
		return s.reject(s.refused(d, target.Model))
	}
	s.admitted, s.decision = true, d
	out, err := s.tr.Request(s.in, target)
	if err == nil && target.Signer != nil {
		err = out.Sign(ctx, s.target, s.method, s.path, s.in.Body)
	}
	if err != nil {
		s.p.log.Warn("pass-through request failed", "request_id", s.id, "provider", provider, "err", err)
		s.settle(ctx, kernel.StatusFailed, http.StatusBadGateway, kernel.Usage{}, true)
		return s.reject(&translate.APIError{
			Status: http.StatusBadGateway, Type: translate.TypeServer, Code: "upstream_auth_error",
			Message: "The gateway could not sign the request for this provider.",
		})
	}
	l := headerList{}
	l = l.add(RouteHeader, target.Deployment)
	l = l.addAll(out.Headers)
	l = s.traceHeader(l)
	if out.Path != s.path {
		l = l.add(":path", out.Path)
	}
	hm := &extprocv3.HeaderMutation{SetHeaders: l.options(), RemoveHeaders: clientCredentialHeaders}
	c := &extprocv3.CommonResponse{HeaderMutation: hm, ClearRouteCache: true}
	if body == nil {
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{
			RequestHeaders: &extprocv3.HeadersResponse{Response: c},
		}}
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{
		RequestBody: &extprocv3.BodyResponse{Response: c},
	}}
}

// passthroughPrice prices a settled pass-through call by the model its
// reply named, when the reply reported usage too: that model's tokens at its
// price from the price table (whatever the request named, or did not); a
// model without a price, the provider's price per call; neither, the price
// the call was admitted at (the request's model's, or per call), and only
// when that was unpriced too is the row marked unpriced — never a silent $0.
// The reply may cost more than the admission reserved (a call admitted per
// call, then charged its tokens): the kernel charges what it cost.
func (s *stream) passthroughPrice(ctx context.Context, rec *Record) {
	pt, ok := s.tr.(*translate.Passthrough)
	if !ok || rec.Status != kernel.StatusCompleted {
		return
	}
	model, u, ok := pt.Reply()
	if !ok || model == "" {
		return
	}
	pc, _ := s.p.cat.(PassthroughCatalog) // checked at request headers
	provider, _ := translate.PassthroughSplit(s.path)
	t, perCall, err := pc.PassthroughTarget(ctx, s.principal, provider, model)
	if err != nil || t == nil {
		return
	}
	switch {
	case !perCall && !t.Price.Unpriced:
		price := t.Price
		rec.Model, rec.Usage, rec.Price = model, u, &price
		rec.Unit, rec.Quantity, rec.Unpriced = "", 0, false
	case perCall && !pt.PerCall: // admitted at the request's model's price
		price := t.Price
		rec.Model, rec.Usage, rec.Price = model, kernel.Usage{Input: 1}, &price
		rec.Unit, rec.Quantity, rec.Unpriced = kernel.UnitCalls, 1, false
	}
}
