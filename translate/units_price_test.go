package translate

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// TestPriceUnitsPerCandidate: each deployment a unit request is admitted on
// prices it from its own price, whatever an earlier candidate's did (a
// rerank charged per token on one deployment is in search units on the
// next), and pricing the same deployment twice changes nothing.
func TestPriceUnitsPerCandidate(t *testing.T) {
	in, err := ParseUnitRequest(APIRerank,
		[]byte(`{"model":"r","query":"q","documents":["a","b","c"]}`))
	require.NoError(t, err)
	u := in.Unit
	perToken := kernel.Price{Input: 2_000}
	perSearch := kernel.Price{Input: 1, Units: &kernel.UnitPrices{Search: 5}}

	var areq kernel.AdmitRequest
	areq.Price = perToken
	u.PriceAdmission(&areq)
	require.Equal(t, kernel.UnitTokens, u.Unit)
	require.Equal(t, kernel.Price{Input: 2_000, CachedInput: 2_000}, areq.Price)

	areq.Price = perSearch
	u.PriceAdmission(&areq)
	require.Equal(t, kernel.UnitSearches, u.Unit)
	require.Equal(t, int64(1), u.Bound)
	require.Equal(t, kernel.PerUnit(5), areq.Price)

	first := areq
	areq.Price = perSearch
	u.PriceAdmission(&areq)
	require.Equal(t, first, areq)
	require.False(t, u.Unpriced)
}

// An image model billed by tokens is admitted at its token price: input
// bound the request's bytes, output bound n images at the quality's most
// tokens; a model priced per image only stays per image.
func TestPriceUnitsImageTokens(t *testing.T) {
	in, err := ParseUnitRequest(APIImages, []byte(`{"model":"gpt-image-1","prompt":"a cat","n":2,"quality":"medium"}`))
	require.NoError(t, err)
	u := in.Unit
	p := kernel.Price{Input: 5 * kernel.Dollar, Output: 40 * kernel.Dollar, Units: &kernel.UnitPrices{
		Image: map[string]kernel.Money{"*": 42 * kernel.Dollar / 1000}, ImageInputTokens: 10 * kernel.Dollar, ImageOutputTokens: 40 * kernel.Dollar,
	}}
	areq := kernel.AdmitRequest{Price: p}
	u.PriceAdmission(&areq)
	require.True(t, u.ByTokens)
	require.Equal(t, kernel.Price{Input: 5 * kernel.Dollar, CacheWrite: 10 * kernel.Dollar, Output: 40 * kernel.Dollar}, areq.Price)
	require.Equal(t, u.Tokens, areq.PromptBytes)
	require.Equal(t, 2*ImageOutputBound("medium"), areq.MaxTokens)

	// Streamed with partial images: each adds its tokens to its image's bound.
	streamed, err := ParseUnitRequest(APIImages, []byte(`{"model":"gpt-image-1","prompt":"a cat","n":2,"quality":"medium","stream":true,"partial_images":3}`))
	require.NoError(t, err)
	sreq := kernel.AdmitRequest{Price: p}
	streamed.Unit.PriceAdmission(&sreq)
	require.Equal(t, 2*(ImageOutputBound("medium")+3*ImagePartialTokens), sreq.MaxTokens)

	p.Units.ImageInputTokens, p.Units.ImageOutputTokens = 0, 0
	areq = kernel.AdmitRequest{Price: p}
	u.PriceAdmission(&areq)
	require.False(t, u.ByTokens)
	require.Equal(t, kernel.PerUnit(42*kernel.Dollar/1000), areq.Price)
	require.Equal(t, int64(2), areq.PromptBytes)
}

// The refusal of a model unpriced in its route's unit names the unit and
// the `tollgate price set` flag that sets it; a token route's is unchanged.
func TestUnpricedUnitMessage(t *testing.T) {
	target := &Target{Model: "dall-e-2", ProviderModel: "dall-e-2"}
	d := kernel.Decision{Reason: kernel.ReasonUnpriced, Scope: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}}
	for unit, want := range map[kernel.Unit]string{
		kernel.UnitImages:     "has no price per image, so the key's budget cannot be enforced",
		kernel.UnitSeconds:    "(tollgate price set dall-e-2 --per-second DOLLARS)",
		kernel.UnitCharacters: "(tollgate price set dall-e-2 --per-character DOLLARS)",
		kernel.UnitSearches:   "(tollgate price set dall-e-2 --per-search-unit DOLLARS)",
		kernel.UnitTokens:     "(tollgate price set dall-e-2 …)",
	} {
		e := ErrUnpriced(target, d, &UnitRequest{Unit: unit})
		require.Contains(t, e.Message, want, unit)
		require.Equal(t, CodeModelUnpriced, e.Code)
	}
	require.Contains(t, ErrUnpriced(target, d, &UnitRequest{Unit: kernel.UnitImages}).Message, "(tollgate price set dall-e-2 --per-image DOLLARS)")
	require.Contains(t, ErrUnpriced(target, d, nil).Message, "(tollgate price set dall-e-2 …)")
}
