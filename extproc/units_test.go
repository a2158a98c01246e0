package extproc

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// An image request billed by tokens is refused when clamped (no
// max_tokens can cut an image), recorded in images, never estimated in
// images (pricing itself is translate.UnitRequest.PriceAdmission's).
func TestUnitImageTokensStream(t *testing.T) {
	s := &stream{in: &translate.Inbound{Unit: &translate.UnitRequest{Unit: kernel.UnitImages, ByTokens: true, Images: 2}}}
	require.True(t, s.unitClamped(kernel.Decision{Admitted: true, Clamped: true}))
	require.False(t, s.unitClamped(kernel.Decision{Admitted: true}))
	var rec Record
	rec.Usage = kernel.Usage{Input: 40, CacheWrite: 10, Output: 2000}
	s.recordUnits(&rec)
	require.Equal(t, kernel.UnitImages, rec.Unit)
	require.Equal(t, int64(2), rec.Quantity)
	_, ok := s.unitEstimate()
	require.False(t, ok, "estimated in tokens, not images")
}
