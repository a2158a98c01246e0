package kernel

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestImagePrice(t *testing.T) {
	p := Price{Units: &UnitPrices{Image: map[string]Money{
		"1024x1024/hd": 80 * MicroUSD * 1000, "1024x1024": 40 * MicroUSD * 1000,
		"*/low": 11 * MicroUSD * 1000, "*": 99 * MicroUSD * 1000,
	}}}
	for _, c := range []struct {
		size, quality string
		want          Money
	}{
		{"1024x1024", "hd", 80_000_000},
		{"1024X1024", "HD", 80_000_000}, // case does not matter
		{"1024x1024", "standard", 40_000_000},
		{"1024x1024", "", 40_000_000},
		{"1792x1024", "low", 11_000_000},
		{"1792x1024", "high", 99_000_000},
		{"", "", 99_000_000},
	} {
		got, ok := p.ImagePrice(c.size, c.quality)
		require.True(t, ok, "%s/%s", c.size, c.quality)
		require.Equal(t, c.want, got, "%s/%s", c.size, c.quality)
	}
	_, ok := Price{Input: 1}.ImagePrice("1024x1024", "")
	require.False(t, ok)
	_, ok = Price{Units: &UnitPrices{Image: map[string]Money{"512x512": 1}}}.ImagePrice("1024x1024", "hd")
	require.False(t, ok)
}

func TestUnitPrice(t *testing.T) {
	p := Price{Units: &UnitPrices{Second: 100_000, Character: 15_000, Search: 2_000_000}}
	for u, want := range map[Unit]Money{UnitSeconds: 100_000, UnitCharacters: 15_000, UnitSearches: 2_000_000} {
		got, ok := p.UnitPrice(u)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	_, ok := p.UnitPrice(UnitImages)
	require.False(t, ok)
	_, ok = Price{}.UnitPrice(UnitSeconds)
	require.False(t, ok)
}

// A quantity at PerUnit(per) costs exactly quantity × per, and the
// reservation of a bound is bound × per.
func TestPerUnitIsExact(t *testing.T) {
	for _, c := range []struct {
		per Money
		n   int64
	}{{100_000, 1}, {100_000, 7201}, {15_000, 4096}, {167_000_000, 3}, {1, 1}} {
		p := PerUnit(c.per)
		require.Equal(t, Money(c.n)*c.per, Cost(p, Usage{Input: c.n}))
		require.Equal(t, Money(c.n)*c.per, WorstCost(p, c.n, 0))
	}
	require.Equal(t, Price{}, PerUnit(0))
	require.Equal(t, Price{}, PerUnit(-5))
	require.Equal(t, Money(math.MaxInt64), PerUnit(math.MaxInt64/10).Input)
}

// An image model billed by tokens: text input at Input, image input in the
// CacheWrite slot, image output at its own price, one rounding per request;
// a zero image price falls back to the text price of its side.
func TestImageTokens(t *testing.T) {
	p := Price{
		Input: 5 * Dollar, CachedInput: Dollar + 25*Cent, Output: 40 * Dollar,
		Units: &UnitPrices{ImageInputTokens: 10 * Dollar, ImageOutputTokens: 40 * Dollar},
	}
	tp, ok := p.ImageTokens()
	require.True(t, ok)
	require.Equal(t, Price{Input: 5 * Dollar, CachedInput: Dollar + 25*Cent, CacheWrite: 10 * Dollar, Output: 40 * Dollar}, tp)
	// 50 text, 500 image input, 4160 output tokens: $0.00025 + $0.005 + $0.1664.
	require.Equal(t, Money(250_000+5_000_000+166_400_000), Cost(tp, Usage{Input: 50, CacheWrite: 500, Output: 4160}))

	tp, ok = Price{Input: 5 * Dollar, Output: 8 * Dollar, Units: &UnitPrices{ImageOutputTokens: 40 * Dollar}}.ImageTokens()
	require.True(t, ok)
	require.Equal(t, 5*Dollar, tp.CacheWrite)
	tp, ok = Price{Input: 5 * Dollar, Output: 8 * Dollar, Units: &UnitPrices{ImageInputTokens: 10 * Dollar}}.ImageTokens()
	require.True(t, ok)
	require.Equal(t, 8*Dollar, tp.Output)

	_, ok = Price{Input: 1, Units: &UnitPrices{Image: map[string]Money{"*": 1}}}.ImageTokens()
	require.False(t, ok)
	_, ok = Price{Input: 1}.ImageTokens()
	require.False(t, ok)
}
