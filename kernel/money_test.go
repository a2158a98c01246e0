package kernel

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDollars(t *testing.T) {
	tests := []struct {
		in   string
		want Money
	}{
		{"0", 0},
		{"12.5", 12*Dollar + 50*Cent},
		{"$0.000001", MicroUSD},
		{"0.000000001", NanoUSD},
		{"$1", Dollar},
		{"007.10", 7*Dollar + 10*Cent},
		{"9223372036.854775807", math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDollars(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseDollarsRejects(t *testing.T) {
	for _, in := range []string{
		"", "$", "-1", "+1", "1.", ".5", "1.0000000001", "1e3", " 1", "1 ", "1,000", "$$1",
		"abc", "1.2.3", "9223372036.854775808", "99999999999999999999", "0x10", "１",
	} {
		t.Run(in, func(t *testing.T) {
			_, err := ParseDollars(in)
			require.ErrorIs(t, err, ErrBadAmount)
		})
	}
}

func TestMoneyString(t *testing.T) {
	tests := []struct {
		m            Money
		str, dollars string
	}{
		{0, "0", "$0"},
		{12*Dollar + 50*Cent, "12.5", "$12.5"},
		{NanoUSD, "0.000000001", "$0.000000001"},
		{MicroUSD, "0.000001", "$0.000001"},
		{3 * Dollar, "3", "$3"},
		{-(Dollar + 25*Cent), "-1.25", "-$1.25"},
		{math.MaxInt64, "9223372036.854775807", "$9223372036.854775807"},
		{math.MinInt64, "-9223372036.854775808", "-$9223372036.854775808"},
	}
	for _, tt := range tests {
		t.Run(tt.str, func(t *testing.T) {
			require.Equal(t, tt.str, tt.m.String())
			require.Equal(t, tt.dollars, tt.m.Dollars())
			if tt.m >= 0 {
				back, err := ParseDollars(tt.str)
				require.NoError(t, err)
				require.Equal(t, tt.m, back)
				back, err = ParseDollars(tt.dollars)
				require.NoError(t, err)
				require.Equal(t, tt.m, back)
			}
		})
	}
}

func FuzzParseDollars(f *testing.F) {
	for _, s := range []string{"0", "12.5", "$0.000001", "1.0000000001", "-1", "9223372036.854775807", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseDollars(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBadAmount)
			return
		}
		require.GreaterOrEqual(t, m, Money(0))
		// Canonical text parses back to the same amount and is stable.
		back, err := ParseDollars(m.String())
		require.NoError(t, err)
		require.Equal(t, m, back)
		back, err = ParseDollars(m.Dollars())
		require.NoError(t, err)
		require.Equal(t, m, back)
	})
}
