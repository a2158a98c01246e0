package kernel

import (
	"math"
	"math/bits"
)

// tokensPerPrice is the number of tokens a Price is quoted for.
const tokensPerPrice = 1_000_000

// Cost is the exact price of a usage: ceil(Σ tokens_k × price_k / 1e6)
// nano-dollars, computed with a 128-bit intermediate and rounded up once per
// request. A zero CachedInput or CacheWrite price counts as Input, a zero
// Reasoning price as Output; negative prices and token counts count as zero.
// A result beyond Money's range saturates at math.MaxInt64.
func Cost(p Price, u Usage) Money {
	p = p.withDefaults()
	var acc u128
	acc.addMul(u.Input, p.Input)
	acc.addMul(u.CachedInput, p.CachedInput)
	acc.addMul(u.CacheWrite, p.CacheWrite)
	acc.addMul(u.Output, p.Output)
	acc.addMul(u.Reasoning, p.Reasoning)
	return acc.ceilPerMillion()
}

// WorstCost is the most a request can cost when its prompt has promptBytes bytes
// (every input token covers at least one byte) and its output is bounded by
// outputTokens: input tokens at the dearest of the input, cached-input and
// cache-write prices, output tokens at the dearer of the output and reasoning
// prices, rounded like Cost.
func WorstCost(p Price, promptBytes, outputTokens int64) Money {
	in, out := p.bounds()
	var acc u128
	acc.addMul(promptBytes, in)
	acc.addMul(outputTokens, out)
	return acc.ceilPerMillion()
}

// withDefaults applies the documented defaults and drops negative prices.
func (p Price) withDefaults() Price {
	p.Input = max(p.Input, 0)
	p.Output = max(p.Output, 0)
	if p.CachedInput <= 0 {
		p.CachedInput = p.Input
	}
	if p.CacheWrite <= 0 {
		p.CacheWrite = p.Input
	}
	if p.Reasoning <= 0 {
		p.Reasoning = p.Output
	}
	return p
}

// bounds are the prices that bound any input token and any output token.
func (p Price) bounds() (in, out Money) {
	p = p.withDefaults()
	return max(p.Input, p.CachedInput, p.CacheWrite), max(p.Output, p.Reasoning)
}

// u128 is an unsigned 128-bit accumulator that saturates instead of wrapping.
type u128 struct{ hi, lo uint64 }

var maxU128 = u128{math.MaxUint64, math.MaxUint64}

// addMul adds n×p, counting negative factors as zero.
func (a *u128) addMul(n int64, p Money) {
	if n <= 0 || p <= 0 {
		return
	}
	hi, lo := bits.Mul64(uint64(n), uint64(p))
	a.add(u128{hi, lo})
}

func (a *u128) add(b u128) {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c := bits.Add64(a.hi, b.hi, c)
	if c != 0 {
		*a = maxU128
		return
	}
	a.hi, a.lo = hi, lo
}

func (a u128) less(b u128) bool {
	return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo)
}

func (a u128) sub(b u128) u128 {
	lo, borrow := bits.Sub64(a.lo, b.lo, 0)
	hi, _ := bits.Sub64(a.hi, b.hi, borrow)
	return u128{hi, lo}
}

// ceilPerMillion is ceil(a / 1e6) as Money, saturating at math.MaxInt64.
func (a u128) ceilPerMillion() Money {
	if a.hi >= tokensPerPrice {
		return math.MaxInt64
	}
	q, r := bits.Div64(a.hi, a.lo, tokensPerPrice)
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 || q == 0 && r != 0 {
		return math.MaxInt64
	}
	return Money(q)
}

// millionths is m × 1e6 (m ≥ 0).
func millionths(m Money) u128 {
	if m <= 0 {
		return u128{}
	}
	hi, lo := bits.Mul64(uint64(m), tokensPerPrice)
	return u128{hi, lo}
}

// satAdd is a+b saturating at the int64 bounds.
func satAdd[T ~int64](a, b T) T {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

// divU128 is a / d for a.hi < d.
func divU128(a u128, d uint64) (q, r uint64) {
	return bits.Div64(a.hi, a.lo, d)
}
