package kernel

import (
	"fmt"
)

// Validate reports limits that admission cannot apply as meant: negative
// limits or counts, a period or enumeration value without a name, a rolling
// period without a positive Every, and an empty model name. Errors wrap
// ErrBadLimits. Admission itself accepts any Limits; this is for the places
// that write them (admin API, CLI).
func (l *Limits) Validate() error {
	switch {
	case l.RPM < 0:
		return fmt.Errorf("%w: negative rpm %d", ErrBadLimits, l.RPM)
	case l.TPM < 0:
		return fmt.Errorf("%w: negative tpm %d", ErrBadLimits, l.TPM)
	case l.MaxParallel < 0:
		return fmt.Errorf("%w: negative max_parallel %d", ErrBadLimits, l.MaxParallel)
	case int(l.Mode) >= len(modeNames):
		return fmt.Errorf("%w: mode %s", ErrBadLimits, l.Mode)
	case int(l.Shortfall) >= len(shortfallNames):
		return fmt.Errorf("%w: shortfall %s", ErrBadLimits, l.Shortfall)
	case l.TTL < 0:
		return fmt.Errorf("%w: negative ttl %s", ErrBadLimits, l.TTL)
	case l.Run != nil && (l.Run.Budget < 0 || l.Run.RPM < 0 || l.Run.TTL < 0):
		return fmt.Errorf("%w: negative run budget, rpm or ttl", ErrBadLimits)
	}
	for _, m := range l.Models {
		if m == "" {
			return fmt.Errorf("%w: empty model name", ErrBadLimits)
		}
	}
	for i, b := range l.Budgets {
		if b.Limit < 0 {
			return fmt.Errorf("%w: budget %d: negative limit %s", ErrBadLimits, i, b.Limit)
		}
		if err := b.Period.Validate(); err != nil {
			return fmt.Errorf("%w: budget %d: %w", ErrBadLimits, i, err)
		}
	}
	return nil
}

// Validate reports a period kind without a name or a rolling period without a
// positive Every (ErrBadPeriod).
func (p Period) Validate() error {
	switch {
	case int(p.Kind) >= len(periodKindNames):
		return fmt.Errorf("%w: kind %s", ErrBadPeriod, p.Kind)
	case p.Kind == PeriodRolling && p.Every <= 0:
		return fmt.Errorf("%w: rolling period needs a positive every, not %s", ErrBadPeriod, p.Every)
	}
	return nil
}
