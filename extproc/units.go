package extproc

import (
	"context"
	"net/http"
	"strings"

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

// unitRoutes are the JSON routes charged per unit, in the order of the
// endpoint table (docs/endpoints.md).
var unitRoutes = []struct {
	path string
	api  translate.API
}{
	{"/v1/images/generations", translate.APIImages},
	{"/v1/moderations", translate.APIModerations},
	{"/v1/audio/speech", translate.APISpeech},
	{"/v1/rerank", translate.APIRerank},
}

func init() {
	for _, r := range unitRoutes {
		api := r.api
		registerEndpoint(&endpoint{
			Method: http.MethodPost, Path: r.path, API: api, NoOutput: true, Units: true,
			Parse: func(_ string, body []byte) (*translate.Inbound, error) {
				return translate.ParseUnitRequest(api, body)
			},
		})
	}
}

// unitAccountant prices the admission of a unit request (unitContext)
// per unit on whichever deployment it is admitted on: the router sets
// AdmitRequest.Price to each candidate's token price before it admits.
type unitAccountant struct{ Accountant }

type unitKey struct{}

// unitContext is ctx carrying the stream's unit request, for
// unitAccountant; ctx itself on token routes.
func (s *stream) unitContext(ctx context.Context) context.Context {
	if !s.ep.Units || s.in == nil || s.in.Unit == nil {
		return ctx
	}
	return context.WithValue(ctx, unitKey{}, s.in.Unit)
}

// Admit prices a unit request's areq, then admits it.
func (a unitAccountant) Admit(ctx context.Context, areq *kernel.AdmitRequest) (kernel.Decision, error) {
	if u, ok := ctx.Value(unitKey{}).(*translate.UnitRequest); ok {
		priceUnits(u, areq)
	}
	return a.Accountant.Admit(ctx, areq)
}

// priceUnits prices a unit request for admission from the model's price
// (areq.Price): the unit the price names, the price of one, the bound
// reserved. A model with a token price but no price in the route's unit is
// charged in tokens where the route's reply reports them (moderations, a
// rerank billed per token); otherwise the request is unpriced (refused
// under a strict budget, marked in the ledger).
func priceUnits(u *translate.UnitRequest, areq *kernel.AdmitRequest) {
	p := areq.Price
	per, ok := kernel.Money(0), false
	switch u.Unit {
	case kernel.UnitImages:
		per, ok = p.ImagePrice(u.Size, u.Quality)
	case kernel.UnitSeconds, kernel.UnitCharacters, kernel.UnitSearches:
		per, ok = p.UnitPrice(u.Unit)
	}
	areq.PromptBytes, areq.MaxTokens, areq.DefaultMaxTokens = u.Bound, 0, 1
	u.Unpriced = false
	switch {
	case ok:
		areq.Price = kernel.PerUnit(per)
	case p.Unpriced || p == (kernel.Price{}): // nobody priced it, or a free deployment
		areq.Price = kernel.Price{Unpriced: p.Unpriced}
		u.Unpriced = p.Unpriced
	case u.Unit == kernel.UnitTokens || u.Unit == kernel.UnitSearches && u.PerToken:
		// priced per token: moderations, a rerank model billed per token (Jina's)
		u.Unit, u.Bound = kernel.UnitTokens, translate.EstimateTokens(u.Tokens)
		areq.Price = kernel.Price{Input: p.Input, CachedInput: p.Input}
		areq.PromptBytes = u.Tokens
	default: // priced, but not in this route's unit: never $0 silently
		areq.Price = kernel.Price{Unpriced: true}
		u.Unpriced = true
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
	rec.Unit, rec.Quantity = s.in.Unit.Unit, rec.Usage.Input
	rec.Unpriced = rec.Unpriced || s.in.Unit.Unpriced
}

// unitEstimate is what a unit request is charged when its reply said
// nothing (an abnormal end): the bound it reserved; ok is false on token
// routes.
func (s *stream) unitEstimate() (int64, bool) {
	if s.in == nil || s.in.Unit == nil || s.in.Unit.Unit == kernel.UnitTokens {
		return 0, false
	}
	return s.in.Unit.Bound, true
}

// hasPrefixFold is strings.HasPrefix, ASCII case-insensitive.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
