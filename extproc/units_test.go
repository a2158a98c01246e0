package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// TestPriceUnitsPerCandidate: each deployment a unit request is admitted on
// prices it from its own price, whatever an earlier candidate's did (a
// rerank charged per token on one deployment is in search units on the
// next), and pricing the same deployment twice changes nothing.
func TestPriceUnitsPerCandidate(t *testing.T) {
	in, err := translate.ParseUnitRequest(translate.APIRerank,
		[]byte(`{"model":"r","query":"q","documents":["a","b","c"]}`))
	require.NoError(t, err)
	u := in.Unit
	perToken := kernel.Price{Input: 2_000}
	perSearch := kernel.Price{Input: 1, Units: &kernel.UnitPrices{Search: 5}}

	var areq kernel.AdmitRequest
	areq.Price = perToken
	priceUnits(u, &areq)
	require.Equal(t, kernel.UnitTokens, u.Unit)
	require.Equal(t, kernel.Price{Input: 2_000, CachedInput: 2_000}, areq.Price)

	areq.Price = perSearch
	priceUnits(u, &areq)
	require.Equal(t, kernel.UnitSearches, u.Unit)
	require.Equal(t, int64(1), u.Bound)
	require.Equal(t, kernel.PerUnit(5), areq.Price)

	first := areq
	areq.Price = perSearch
	priceUnits(u, &areq)
	require.Equal(t, first, areq)
	require.False(t, u.Unpriced)
}
