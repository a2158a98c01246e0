package reconcile

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

func TestCentsToMoney(t *testing.T) {
	for in, want := range map[string]kernel.Money{
		"123.45": 1_234_500_000, "0.0003": 3000, "0": 0, "-1.5": -15_000_000, "0.00000005": 1, "0.00000004": 0,
	} {
		got, err := centsToMoney(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := centsToMoney("twelve")
	require.ErrorIs(t, err, ErrProvider)
}

func TestLineItemModelAndDollars(t *testing.T) {
	require.Equal(t, "gpt-4o-2024-08-06", lineItemModel("gpt-4o-2024-08-06, input"))
	require.Equal(t, "gpt-4o-mini", lineItemModel("gpt-4o-mini, cached input"))
	require.Equal(t, "web search", lineItemModel("web search"))
	require.Equal(t, kernel.Money(60_000_000), dollars(0.06))
	require.Equal(t, kernel.Money(1), dollars(1e-9))
}
