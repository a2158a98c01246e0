package translate

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFormatUSD(t *testing.T) {
	require.Equal(t, "0.000000000", FormatUSD(0))
	require.Equal(t, "0.000125000", FormatUSD(125_000))
	require.Equal(t, "12.000000001", FormatUSD(12_000_000_001))
	require.Equal(t, "-1.500000000", FormatUSD(-1_500_000_000))
}
