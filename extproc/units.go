package extproc

import (
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

// priceUnits prices a unit request for admission: the unit the model's
// price names, the price of one, the bound reserved. A model with a token
// price but no price for the route's unit is charged in tokens where the
// route's reply reports them (moderations, rerank); otherwise the request
// is unpriced (refused under a strict budget, marked in the ledger). The
// target is copied: the catalog's is shared.
func (s *stream) priceUnits(areq *kernel.AdmitRequest) {
	u := s.in.Unit
	if u == nil {
		return
	}
	t := *s.target
	p := t.Price
	per, ok := kernel.Money(0), false
	switch u.Unit {
	case kernel.UnitImages:
		per, ok = p.ImagePrice(u.Size, u.Quality)
	case kernel.UnitSeconds, kernel.UnitCharacters, kernel.UnitSearches:
		per, ok = p.UnitPrice(u.Unit)
	}
	switch {
	case ok:
		t.Price = kernel.PerUnit(per)
	case p.Unpriced:
		// charged nothing, marked unpriced, refused under a strict budget
	case p == (kernel.Price{}): // a free deployment
	case u.Unit == kernel.UnitTokens || u.Unit == kernel.UnitSearches && s.ep.API == translate.APIRerank:
		// priced per token (moderations; a rerank model billed per token, Jina's)
		u.Unit, u.Bound = kernel.UnitTokens, translate.EstimateTokens(u.Tokens)
		areq.PromptBytes = u.Tokens
		return
	default: // priced, but not in this route's unit
		t.Price = kernel.Price{Unpriced: true}
	}
	s.target = &t
	areq.Price = t.Price
	areq.PromptBytes = u.Bound
	if u.Unit == kernel.UnitTokens {
		areq.PromptBytes = u.Tokens
	}
}

// recordUnits sets the unit and quantity of a settled unit request (and of
// a pass-through call priced per call) in its ledger record.
func (s *stream) recordUnits(rec *Record) {
	if pt, ok := s.tr.(*translate.Passthrough); ok && pt.PerCall {
		rec.Unit, rec.Quantity = kernel.UnitCalls, rec.Usage.Input
		return
	}
	if s.in == nil || s.in.Unit == nil || s.in.Unit.Unit == kernel.UnitTokens {
		return
	}
	rec.Unit, rec.Quantity = s.in.Unit.Unit, rec.Usage.Input
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
