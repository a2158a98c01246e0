package translate

import "github.com/tollgate-ai/tollgate/kernel"

// PriceAdmission prices a unit request for admission from the model's price
// (areq.Price): the unit the price names, the price of one, the bound
// reserved. The processor calls it for its target and again for each
// routing candidate: each deployment prices it from its own price. A model with a token price but no price in the route's unit is
// charged in tokens where the route's reply reports them (moderations, a
// rerank billed per token); otherwise the request is unpriced (refused
// under a strict budget, marked in the ledger).
func (u *UnitRequest) PriceAdmission(areq *kernel.AdmitRequest) {
	p := areq.Price
	if u.Searches > 0 { // a rerank: in search units unless this deployment charges it per token
		u.Unit, u.Bound = kernel.UnitSearches, u.Searches
	}
	u.ByTokens = false
	if tp, ok := p.ImageTokens(); ok && u.Unit == kernel.UnitImages {
		// An image model billed by tokens (gpt-image-1): its input bound is
		// the request's bytes (text and uploaded images: a token covers at
		// least one), its output bound n images at the most tokens of the
		// quality asked for; settled at the reply's usage.
		u.ByTokens, u.Unpriced = true, false
		areq.Price, areq.PromptBytes = tp, u.Tokens
		// A streamed generation's partial images add to each image's tokens.
		perImage := ImageOutputBound(u.Quality) + u.PartialImages*ImagePartialTokens
		areq.MaxTokens, areq.DefaultMaxTokens = kernel.SatMul(u.Bound, perImage), 1
		return
	}
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
	case u.Unit == kernel.UnitTokens || u.Searches > 0:
		// priced per token: moderations, a rerank model billed per token (Jina's)
		u.Unit, u.Bound = kernel.UnitTokens, EstimateTokens(u.Tokens)
		areq.Price = kernel.Price{Input: p.Input, CachedInput: p.Input}
		areq.PromptBytes = u.Tokens
	default: // priced, but not in this route's unit: never $0 silently
		areq.Price = kernel.Price{Unpriced: true}
		u.Unpriced = true
	}
}
