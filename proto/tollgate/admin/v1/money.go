package adminv1

import (
	"errors"

	"github.com/tollgate-ai/tollgate/kernel"
)

// ErrDollars: the text is not a non-negative dollar amount with at most 9
// decimals (what kernel.ParseDollars refuses), in words for API and CLI
// users.
var ErrDollars = errors.New("not a dollar amount (e.g. 10.50, at most 9 decimals)")

// Amounts in the API are kernel.Money in nano-dollars; the dollar text is
// parsed and written by the kernel (kernel.ParseDollars, Money.String), the
// one definition of dollar amounts.

// NewMoney returns a Money with both fields set.
func NewMoney(nano int64) *Money {
	return &Money{NanoUsd: nano, Dollars: kernel.Money(nano).String()}
}

// DollarsMoney returns a Money parsed from a dollar amount, or ErrDollars.
func DollarsMoney(s string) (*Money, error) {
	n, err := kernel.ParseDollars(s)
	if err != nil {
		return nil, ErrDollars
	}
	return NewMoney(int64(n)), nil
}

// Nanos is the amount in nano-dollars: the parsed `dollars` when set, else
// `nano_usd`. A nil Money is zero.
func (m *Money) Nanos() (int64, error) {
	if m == nil {
		return 0, nil
	}
	if m.GetDollars() != "" {
		n, err := kernel.ParseDollars(m.GetDollars())
		if err != nil {
			return 0, ErrDollars
		}
		return int64(n), nil
	}
	if m.GetNanoUsd() < 0 {
		return 0, ErrDollars
	}
	return m.GetNanoUsd(), nil
}
