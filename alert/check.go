package alert

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// DefaultThresholds are the percents of a budget that alert.
var DefaultThresholds = []int{50, 80, 100}

// UsageFunc is the spent money of ref's window of p current at now.
type UsageFunc func(ctx context.Context, ref kernel.ScopeRef, p kernel.Period, now time.Time) (kernel.Money, error)

// CheckBudgets fires, for every budget window of scopes (soft ones
// included), every threshold (percent; nil: DefaultThresholds) its spend has
// reached: once per scope, period, window and threshold across replicas. It
// returns how many this call fired.
func (n *Notifier) CheckBudgets(ctx context.Context, now time.Time, scopes []kernel.Scope, thresholds []int, usage UsageFunc) (int, error) {
	if thresholds == nil {
		thresholds = DefaultThresholds
	}
	fired := 0
	var errs []error
	for _, sc := range scopes {
		if sc.Limits == nil {
			continue
		}
		for _, b := range sc.Limits.Budgets {
			if b.Limit <= 0 {
				continue
			}
			spent, err := usage(ctx, sc.Ref, b.Period, now)
			if err != nil {
				errs = append(errs, fmt.Errorf("alert: usage of %s %s: %w", sc.Ref, b.Period, err))
				continue
			}
			start, end := b.Period.Window(now)
			for _, t := range thresholds {
				// spent/limit ≥ t% without overflow for any int64 money: compare in 128 bits.
				if !reached(spent, b.Limit, t) {
					continue
				}
				e := Event{
					ID:   "budget|" + sc.Ref.String() + "|" + b.Period.String() + "|" + strconv.FormatInt(startKey(start), 10) + "|" + strconv.Itoa(t),
					Kind: KindBudget, Scope: sc.Ref, Period: b.Period.String(), Threshold: t, Soft: b.Soft,
					Limit: b.Limit, Spent: spent, At: now, until: end,
				}
				if !start.IsZero() {
					e.WindowStart = start
				}
				kind := "budget"
				if b.Soft {
					kind = "soft budget"
				}
				e.Message = fmt.Sprintf("%s: %d%% of its %s %s of $%s reached ($%s spent)",
					sc.Ref, t, b.Period, kind, usd(b.Limit), usd(spent))
				ok, err := n.Fire(ctx, e)
				if ok {
					fired++
				}
				if err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return fired, errors.Join(errs...)
}

// reached reports spent ≥ t% of limit.
func reached(spent, limit kernel.Money, t int) bool {
	// spent·100 ≥ limit·t, in float only past 2^53 where money is that large anyway.
	const exact = 1 << 53 / 100
	if spent < exact && limit < exact {
		return int64(spent)*100 >= int64(limit)*int64(t)
	}
	return float64(spent)*100 >= float64(limit)*float64(t)
}

// startKey is a window's start as a number (0 for the total window).
func startKey(start time.Time) int64 {
	if start.IsZero() {
		return 0
	}
	return start.UnixNano()
}

// CheckExpiring fires, for every key of keys whose expiry is after now and
// within `within`, a key_expiring alert, once per key and expiry.
func (n *Notifier) CheckExpiring(ctx context.Context, now time.Time, keys []kernel.Scope, within time.Duration) (int, error) {
	fired := 0
	var errs []error
	for _, k := range keys {
		if k.Limits == nil || k.Limits.ExpiresAt.IsZero() {
			continue
		}
		exp := k.Limits.ExpiresAt
		if !exp.After(now) || exp.Sub(now) > within {
			continue
		}
		e := Event{
			ID: "expiring|" + k.Ref.String() + "|" + strconv.FormatInt(exp.UnixNano(), 10), Kind: KindExpiring,
			Scope: k.Ref, ExpiresAt: exp, At: now, until: exp,
			Message: fmt.Sprintf("%s expires at %s (in %s)", k.Ref, exp.UTC().Format(time.RFC3339), exp.Sub(now).Round(time.Minute)),
		}
		ok, err := n.Fire(ctx, e)
		if ok {
			fired++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return fired, errors.Join(errs...)
}

// CheckAnomaly fires a spend_anomaly alert when the spend of the hour that
// starts at hour (the last of hourly, oldest first) is above factor × the
// average of the hours before it, and at least floor: once per scope and hour.
func (n *Notifier) CheckAnomaly(ctx context.Context, now time.Time, ref kernel.ScopeRef, hour time.Time, hourly []kernel.Money, factor int64, floor kernel.Money) (bool, error) {
	if len(hourly) < 2 || factor <= 0 {
		return false, nil
	}
	last := hourly[len(hourly)-1]
	var sum kernel.Money
	for _, m := range hourly[:len(hourly)-1] {
		sum += m
	}
	trailing := len(hourly) - 1
	// last > factor × sum/trailing  ⇔  last·trailing > factor·sum
	if last < floor || float64(last)*float64(trailing) <= float64(factor)*float64(sum) {
		return false, nil
	}
	avg := sum / kernel.Money(trailing)
	e := Event{
		ID: "anomaly|" + ref.String() + "|" + strconv.FormatInt(hour.UnixNano(), 10), Kind: KindAnomaly, Scope: ref,
		Spent: last, Baseline: avg, At: now, until: hour.Add(2 * time.Hour),
		Message: fmt.Sprintf("%s spent $%s in the hour from %s, above %d× its trailing average of $%s",
			ref, usd(last), hour.UTC().Format(time.RFC3339), factor, usd(avg)),
	}
	return n.Fire(ctx, e)
}

// usd renders nano-dollars as dollars with up to 9 decimals, trailing zeros dropped.
func usd(m kernel.Money) string {
	neg := m < 0
	if neg {
		m = -m
	}
	s := strconv.FormatInt(int64(m/kernel.Dollar), 10)
	if frac := int64(m % kernel.Dollar); frac != 0 {
		f := strconv.FormatInt(frac+int64(kernel.Dollar), 10)[1:]
		for f[len(f)-1] == '0' {
			f = f[:len(f)-1]
		}
		s += "." + f
	}
	if neg {
		s = "-" + s
	}
	return s
}
