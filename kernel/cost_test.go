package kernel

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestCost(t *testing.T) {
	perM := func(d Money) Money { return d } // prices are per million tokens
	tests := []struct {
		name string
		p    Price
		u    Usage
		want Money
	}{
		{"zero usage", Price{Input: perM(3 * Dollar), Output: perM(15 * Dollar)}, Usage{}, 0},
		{"exact", Price{Input: 3 * Dollar, Output: 15 * Dollar}, Usage{Input: 1_000_000, Output: 1_000_000}, 18 * Dollar},
		{"one token rounds up", Price{Input: 1}, Usage{Input: 1}, 1},
		{"rounds up once per request", Price{Input: 1, Output: 1}, Usage{Input: 1, Output: 1}, 1},
		{"just below a nano", Price{Input: 999_999}, Usage{Input: 1}, 1},
		{"just above a nano", Price{Input: 1_000_001}, Usage{Input: 1}, 2},
		{"cached defaults to input", Price{Input: 2 * Dollar}, Usage{CachedInput: 500_000}, Dollar},
		{"cache write defaults to input", Price{Input: 2 * Dollar}, Usage{CacheWrite: 500_000}, Dollar},
		{"reasoning defaults to output", Price{Output: 4 * Dollar}, Usage{Reasoning: 250_000}, Dollar},
		{"own cached price", Price{Input: 2 * Dollar, CachedInput: Dollar / 2}, Usage{CachedInput: 1_000_000}, Dollar / 2},
		{
			"all kinds",
			Price{Input: 3 * Dollar, CachedInput: 300 * MicroUSD * 1000, CacheWrite: 3750 * MicroUSD * 1000, Output: 15 * Dollar, Reasoning: 20 * Dollar},
			Usage{Input: 1000, CachedInput: 2000, CacheWrite: 100, Output: 500, Reasoning: 50},
			3*MicroUSD*1000 + 600*MicroUSD + 375*MicroUSD + 7500*MicroUSD + 1000*MicroUSD,
		},
		{"negative tokens count as zero", Price{Input: Dollar}, Usage{Input: -5}, 0},
		{"negative prices count as zero", Price{Input: -Dollar}, Usage{Input: 5}, 0},
		{"saturates", Price{Input: math.MaxInt64, Output: math.MaxInt64}, Usage{Input: math.MaxInt64, Output: math.MaxInt64}, math.MaxInt64},
		{"largest exact", Price{Input: 1_000_000}, Usage{Input: math.MaxInt64}, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, Cost(tt.p, tt.u))
		})
	}
}

// bigCost is Cost computed with math/big, the reference for the 128-bit arithmetic.
func bigCost(p Price, u Usage) Money {
	p = p.withDefaults()
	sum := new(big.Int)
	for _, kv := range [][2]int64{
		{u.Input, int64(p.Input)},
		{u.CachedInput, int64(p.CachedInput)},
		{u.CacheWrite, int64(p.CacheWrite)},
		{u.Output, int64(p.Output)},
		{u.Reasoning, int64(p.Reasoning)},
	} {
		sum.Add(sum, new(big.Int).Mul(big.NewInt(max(kv[0], 0)), big.NewInt(max(kv[1], 0))))
	}
	q, r := new(big.Int).QuoRem(sum, big.NewInt(1_000_000), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return math.MaxInt64
	}
	return Money(q.Int64())
}

func TestCostMatchesBigArithmetic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.Int64Range(-10, math.MaxInt64)
		m := rapid.Int64Range(-10, math.MaxInt64)
		p := Price{Input: Money(m.Draw(t, "pi")), CachedInput: Money(m.Draw(t, "pc")), CacheWrite: Money(m.Draw(t, "pw")), Output: Money(m.Draw(t, "po")), Reasoning: Money(m.Draw(t, "pr"))}
		u := Usage{Input: n.Draw(t, "ui"), CachedInput: n.Draw(t, "uc"), CacheWrite: n.Draw(t, "uw"), Output: n.Draw(t, "uo"), Reasoning: n.Draw(t, "ur")}
		require.Equal(t, bigCost(p, u), Cost(p, u))
	})
}

func TestWorstCost(t *testing.T) {
	p := Price{Input: 3 * Dollar, CachedInput: Dollar, CacheWrite: 4 * Dollar, Output: 15 * Dollar, Reasoning: 10 * Dollar}
	// Input at the cache-write price (the dearest), output at the output price.
	require.Equal(t, Money(1000*4000+100*15000), WorstCost(p, 1000, 100))
	require.Equal(t, Money(0), WorstCost(p, 0, 0))
	require.Equal(t, Money(1), WorstCost(Price{Input: 1}, 1, 0))
	// Worst bounds every usage within the bounds.
	rapid.Check(t, func(t *rapid.T) {
		pm := rapid.Int64Range(0, 100*int64(Dollar))
		pr := Price{Input: Money(pm.Draw(t, "pi")), CachedInput: Money(pm.Draw(t, "pc")), CacheWrite: Money(pm.Draw(t, "pw")), Output: Money(pm.Draw(t, "po")), Reasoning: Money(pm.Draw(t, "pr"))}
		in := rapid.Int64Range(0, 1_000_000).Draw(t, "in")
		out := rapid.Int64Range(0, 1_000_000).Draw(t, "out")
		a := rapid.Int64Range(0, in).Draw(t, "a")
		b := rapid.Int64Range(0, in-a).Draw(t, "b")
		c := rapid.Int64Range(0, in-a-b).Draw(t, "c")
		o := rapid.Int64Range(0, out).Draw(t, "o")
		u := Usage{Input: a, CachedInput: b, CacheWrite: c, Output: o, Reasoning: out - o}
		require.LessOrEqual(t, Cost(pr, u), WorstCost(pr, in, out))
	})
}
