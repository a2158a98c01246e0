package adminv1_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// parse is a dollar amount through the API's Money.
func parse(s string) (int64, error) {
	m, err := adminv1.DollarsMoney(s)
	if err != nil {
		return 0, err
	}
	return m.Nanos()
}

func TestDollarsMoney(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"10.50", 10_500_000_000, true},
		{"$0.000000001", 1, true},
		{"3", 3_000_000_000, true},
		{"0.075", 75_000_000, true},
		{"9223372036.854775807", math.MaxInt64, true},
		{"9223372036.854775808", 0, false},
		{"99999999999", 0, false},
		{"1.0000000001", 0, false},
		{"-1", 0, false},
		{"1e3", 0, false},
		{" 1", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"", 0, false},
		{"1.2.3", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parse(tt.in)
			if !tt.ok {
				require.ErrorIs(t, err, adminv1.ErrDollars)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestNewMoney(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0"},
		{1, "0.000000001"},
		{10_500_000_000, "10.5"},
		{3_000_000_000, "3"},
		{-1_250_000_000, "-1.25"},
		{math.MaxInt64, "9223372036.854775807"},
		{math.MinInt64, "-9223372036.854775808"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, adminv1.NewMoney(tt.in).GetDollars())
			if tt.in >= 0 {
				back, err := parse(tt.want)
				require.NoError(t, err)
				require.Equal(t, tt.in, back)
			}
		})
	}
}

func TestMoneyNanos(t *testing.T) {
	n, err := (&adminv1.Money{NanoUsd: 5, Dollars: "1.5"}).Nanos()
	require.NoError(t, err)
	require.EqualValues(t, 1_500_000_000, n, "dollars wins")
	n, err = (&adminv1.Money{NanoUsd: 5}).Nanos()
	require.NoError(t, err)
	require.EqualValues(t, 5, n)
	n, err = (*adminv1.Money)(nil).Nanos()
	require.NoError(t, err)
	require.Zero(t, n)
	_, err = (&adminv1.Money{NanoUsd: -5}).Nanos()
	require.ErrorIs(t, err, adminv1.ErrDollars)
}
