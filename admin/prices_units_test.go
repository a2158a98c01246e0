package admin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Prices per unit in YAML (apply files, prices.yaml): dollars a unit,
// stored in nano-dollars; an entry of units only needs no token prices.
func TestPriceDocUnits(t *testing.T) {
	d := priceDoc{Model: "dall-e-3", Image: map[string]string{"1024x1024/HD": "0.08", "*": "0.04"}}
	p, err := d.price("t")
	require.NoError(t, err)
	got, ok := p.Price.ImagePrice("1024x1024", "hd")
	require.True(t, ok)
	require.Equal(t, 80*kernel.Dollar/1000, got)

	d = priceDoc{Model: "whisper-1", Second: "0.0001", Character: "0.000015", Search: "0.002"}
	p, err = d.price("t")
	require.NoError(t, err)
	require.Equal(t, kernel.UnitPrices{Second: 100_000, Character: 15_000, Search: 2_000_000}, *p.Price.Units)

	for _, bad := range []priceDoc{
		{Model: "m", Second: "x"},
		{Model: "m", Image: map[string]string{"": "1"}},
		{Model: "m", Input: "1", Second: "0.1"}, // input without output
		{Model: "m"},
	} {
		_, err := bad.price("t")
		require.Error(t, err, "%+v", bad)
	}

	all, err := DefaultPrices()
	require.NoError(t, err)
	found := map[string]kernel.Price{}
	for _, p := range all {
		found[p.ID] = p.Price
	}
	m, ok := found["whisper-1"].UnitPrice(kernel.UnitSeconds)
	require.True(t, ok)
	require.Equal(t, kernel.Money(100_000), m)
	m, ok = found["dall-e-3"].ImagePrice("1792x1024", "hd")
	require.True(t, ok)
	require.Equal(t, 120*kernel.Dollar/1000, m)
}

// gpt-image-1's default price bills by tokens.
func TestDefaultPriceImageTokens(t *testing.T) {
	all, err := DefaultPrices()
	require.NoError(t, err)
	for _, p := range all {
		if p.ID != "gpt-image-1" {
			continue
		}
		tp, ok := p.Price.ImageTokens()
		require.True(t, ok)
		require.Equal(t, kernel.Price{Input: 5 * kernel.Dollar, CachedInput: 1_250_000_000, CacheWrite: 10 * kernel.Dollar, Output: 40 * kernel.Dollar}, tp)
		return
	}
	t.Fatal("no default price for gpt-image-1")
}
