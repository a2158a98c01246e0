package kernel

import (
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// nanoDigits is the number of decimals of a dollar that Money holds.
const nanoDigits = 9

// ParseDollars reads a non-negative dollar amount such as "12.5", "$0.000001" or
// "0". The result is exact; more than 9 decimals, a sign, spaces, exponents and
// amounts that do not fit in Money are errors (ErrBadAmount).
func ParseDollars(s string) (Money, error) {
	orig := s
	if len(s) > 0 && s[0] == '$' {
		s = s[1:]
	}
	intPart, frac, dot := strings.Cut(s, ".")
	if intPart == "" || dot && frac == "" || len(frac) > nanoDigits || !allDigits(intPart) || !allDigits(frac) {
		return 0, badAmount(orig)
	}
	var whole uint64
	for i := 0; i < len(intPart); i++ {
		hi, lo := bits.Mul64(whole, 10)
		lo, carry := bits.Add64(lo, uint64(intPart[i]-'0'), 0)
		if hi != 0 || carry != 0 {
			return 0, badAmount(orig)
		}
		whole = lo
	}
	var nanos uint64
	for i := 0; i < nanoDigits; i++ {
		nanos *= 10
		if i < len(frac) {
			nanos += uint64(frac[i] - '0')
		}
	}
	hi, lo := bits.Mul64(whole, uint64(Dollar))
	lo, carry := bits.Add64(lo, nanos, 0)
	if hi != 0 || carry != 0 || lo > math.MaxInt64 {
		return 0, badAmount(orig)
	}
	return Money(lo), nil
}

func badAmount(s string) error {
	return &parseError{err: ErrBadAmount, text: s}
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// String formats m in dollars with trailing zeros trimmed: "12.5",
// "0.000000001", "3", "-1.25".
func (m Money) String() string {
	var buf [32]byte
	return string(m.appendDollars(buf[:0], false))
}

// Dollars is String with a dollar sign: "$12.5" ("-$1.25" when negative).
func (m Money) Dollars() string {
	var buf [32]byte
	return string(m.appendDollars(buf[:0], true))
}

func (m Money) appendDollars(b []byte, sign bool) []byte {
	u := uint64(m)
	if m < 0 {
		b = append(b, '-')
		u = -u // two's complement: exact for math.MinInt64 too
	}
	if sign {
		b = append(b, '$')
	}
	b = strconv.AppendUint(b, u/uint64(Dollar), 10)
	frac := u % uint64(Dollar)
	if frac == 0 {
		return b
	}
	var digits [nanoDigits]byte
	for i := nanoDigits - 1; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := nanoDigits
	for n > 0 && digits[n-1] == '0' {
		n--
	}
	b = append(b, '.')
	return append(b, digits[:n]...)
}

// parseError carries the rejected text next to a sentinel error.
type parseError struct {
	err  error
	text string
}

func (e *parseError) Error() string { return e.err.Error() + ": " + strconv.Quote(e.text) }
func (e *parseError) Unwrap() error { return e.err }
