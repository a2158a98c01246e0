package accounting

import (
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestWorstOf: the record head Go writes holds the worst cost the script
// computes, or Go writes none (ok false) where the script's doubles may round.
func TestWorstOf(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := rapid.OneOf(rapid.Int64Range(0, 1<<20), rapid.Int64Range(0, math.MaxInt64)).Draw(rt, "m")
		qi := rapid.OneOf(rapid.Int64Range(0, 1<<30), rapid.Int64Range(0, math.MaxInt64/2)).Draw(rt, "qi")
		ri := rapid.Int64Range(0, 999_999).Draw(rt, "ri")
		qo := rapid.OneOf(rapid.Int64Range(0, 1<<20), rapid.Int64Range(0, math.MaxInt64/1_000_000)).Draw(rt, "qo")
		ro := rapid.Int64Range(0, 999_999).Draw(rt, "ro")
		got, ok := worstOf(m, qi, ri, qo, ro)
		// ceil((qi·1e6 + ri + m·(qo·1e6 + ro)) / 1e6), exactly.
		e6 := big.NewInt(1_000_000)
		num := new(big.Int).Mul(big.NewInt(qi), e6)
		num.Add(num, big.NewInt(ri))
		out := new(big.Int).Mul(big.NewInt(qo), e6)
		out.Add(out, big.NewInt(ro))
		num.Add(num, out.Mul(out, big.NewInt(m)))
		num.Add(num, big.NewInt(999_999))
		want := num.Div(num, e6)
		if !ok {
			return
		}
		require.Less(rt, got, int64(maxExact))
		require.Equal(rt, want.Int64(), got)
		require.True(rt, want.IsInt64())
	})
	_, ok := worstOf(4096, 5, 0, 10_000, 0)
	require.True(t, ok)
}
