package adminv1

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// ErrDollars: the text is not a non-negative dollar amount with at most 9 decimals.
var ErrDollars = errors.New("not a dollar amount (e.g. 10.50, at most 9 decimals)")

// NanoPerDollar is the number of nano-dollars in a dollar.
const NanoPerDollar = 1_000_000_000

// ParseDollars reads a non-negative dollar amount such as "10.50", "$0.000001"
// or "3" into nano-dollars, exactly. Signs, exponents, spaces and more than 9
// decimals are errors.
func ParseDollars(s string) (int64, error) {
	t := strings.TrimPrefix(s, "$")
	whole, frac, dot := strings.Cut(t, ".")
	if whole == "" || (dot && frac == "") || len(frac) > 9 || !digits(whole) || !digits(frac) {
		return 0, ErrDollars
	}
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w > math.MaxInt64/NanoPerDollar {
		return 0, ErrDollars
	}
	var f int64
	for i := range 9 {
		f *= 10
		if i < len(frac) {
			f += int64(frac[i] - '0')
		}
	}
	n := w * NanoPerDollar
	if n > math.MaxInt64-f {
		return 0, ErrDollars
	}
	return n + f, nil
}

func digits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatDollars writes nano-dollars as an exact decimal with trailing zeros
// trimmed: "10.5", "0.000000001", "3", "-1.25".
func FormatDollars(nano int64) string {
	var b strings.Builder
	u := uint64(nano)
	if nano < 0 {
		b.WriteByte('-')
		u = -u
	}
	b.WriteString(strconv.FormatUint(u/NanoPerDollar, 10))
	if frac := u % NanoPerDollar; frac != 0 {
		f := strconv.FormatUint(frac+NanoPerDollar, 10)[1:] // 9 digits, zero padded
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(f, "0"))
	}
	return b.String()
}

// NewMoney returns a Money with both fields set.
func NewMoney(nano int64) *Money {
	return &Money{NanoUsd: nano, Dollars: FormatDollars(nano)}
}

// DollarsMoney returns a Money parsed from a dollar amount, or an error.
func DollarsMoney(s string) (*Money, error) {
	n, err := ParseDollars(s)
	if err != nil {
		return nil, err
	}
	return NewMoney(n), nil
}

// Nanos is the amount in nano-dollars: the parsed `dollars` when set, else
// `nano_usd`. A nil Money is zero.
func (m *Money) Nanos() (int64, error) {
	if m == nil {
		return 0, nil
	}
	if m.GetDollars() != "" {
		return ParseDollars(m.GetDollars())
	}
	if m.GetNanoUsd() < 0 {
		return 0, ErrDollars
	}
	return m.GetNanoUsd(), nil
}
