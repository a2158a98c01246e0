package admin

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/internal/modelpattern"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// Conversions between the API messages and the kernel and store types. Requests
// have been validated by then, so conversion errors are unexpected but still
// reported.

func moneyOut(m kernel.Money) *adminv1.Money { return adminv1.NewMoney(int64(m)) }

func dollars(m kernel.Money) string { return m.String() }

func moneyIn(field string, m *adminv1.Money) (kernel.Money, error) {
	n, err := m.Nanos()
	if err != nil {
		return 0, fmt.Errorf("%w %s: %w", ErrInvalid, field, err)
	}
	return kernel.Money(n), nil
}

func tsOut(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func tsIn(t *timestamppb.Timestamp) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.AsTime().UTC()
}

// inverse maps each value of a one-to-one map back to its key.
func inverse[K, V comparable](m map[K]V) map[V]K {
	out := make(map[V]K, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}

var (
	periodsIn = map[adminv1.PeriodKind]kernel.PeriodKind{
		adminv1.PeriodKind_PERIOD_KIND_UNSPECIFIED: kernel.PeriodTotal,
		adminv1.PeriodKind_PERIOD_KIND_TOTAL:       kernel.PeriodTotal,
		adminv1.PeriodKind_PERIOD_KIND_DAILY:       kernel.PeriodDaily,
		adminv1.PeriodKind_PERIOD_KIND_WEEKLY:      kernel.PeriodWeekly,
		adminv1.PeriodKind_PERIOD_KIND_MONTHLY:     kernel.PeriodMonthly,
		adminv1.PeriodKind_PERIOD_KIND_ROLLING:     kernel.PeriodRolling,
	}
	periodsOut = map[kernel.PeriodKind]adminv1.PeriodKind{
		kernel.PeriodTotal:   adminv1.PeriodKind_PERIOD_KIND_TOTAL,
		kernel.PeriodDaily:   adminv1.PeriodKind_PERIOD_KIND_DAILY,
		kernel.PeriodWeekly:  adminv1.PeriodKind_PERIOD_KIND_WEEKLY,
		kernel.PeriodMonthly: adminv1.PeriodKind_PERIOD_KIND_MONTHLY,
		kernel.PeriodRolling: adminv1.PeriodKind_PERIOD_KIND_ROLLING,
	}
)

func limitsIn(field string, l *adminv1.Limits) (kernel.Limits, error) {
	var out kernel.Limits
	if l == nil {
		return out, nil
	}
	for i, b := range l.GetBudgets() {
		lim, err := moneyIn(fmt.Sprintf("%s.budgets[%d].limit", field, i), b.GetLimit())
		if err != nil {
			return out, err
		}
		p := kernel.Period{Kind: periodsIn[b.GetPeriod()]}
		if tz := b.GetTimeZone(); tz != "" {
			loc, err := time.LoadLocation(tz)
			if err != nil {
				return out, errorf(ErrInvalid, "%s.budgets[%d].time_zone: %q is not an IANA time zone", field, i, tz)
			}
			p.Location = loc
		}
		if p.Kind == kernel.PeriodRolling {
			p.Every = b.GetEvery().AsDuration()
			p.Anchor = tsIn(b.GetAnchor())
		}
		out.Budgets = append(out.Budgets, kernel.BudgetWindow{Limit: lim, Period: p, Soft: b.GetSoft()})
	}
	out.RPM, out.TPM, out.MaxParallel = l.GetRpm(), l.GetTpm(), l.GetMaxParallel()
	out.Models = slices.Clone(l.GetModels())
	out.ExpiresAt = tsIn(l.GetExpiresAt())
	if l.GetMode() == adminv1.BudgetMode_BUDGET_MODE_ESTIMATE {
		out.Mode = kernel.Estimate
	}
	if l.GetShortfall() == adminv1.Shortfall_SHORTFALL_REJECT {
		out.Shortfall = kernel.Reject
	}
	if r := l.GetRun(); r != nil {
		b, err := moneyIn(field+".run.budget", r.GetBudget())
		if err != nil {
			return out, err
		}
		out.Run = &kernel.RunPolicy{Budget: b, RPM: r.GetRpm(), TTL: r.GetTtl().AsDuration()}
		if out.Run.RPM < 0 || out.Run.TTL < 0 {
			return out, errorf(ErrInvalid, "%s.run: rpm and ttl must not be negative", field)
		}
	}
	return out, nil
}

func limitsOut(l kernel.Limits) *adminv1.Limits {
	out := &adminv1.Limits{
		Rpm: l.RPM, Tpm: l.TPM, MaxParallel: l.MaxParallel, Models: slices.Clone(l.Models),
		ExpiresAt: tsOut(l.ExpiresAt),
		Mode:      adminv1.BudgetMode_BUDGET_MODE_STRICT, Shortfall: adminv1.Shortfall_SHORTFALL_CLAMP,
	}
	if l.Mode == kernel.Estimate {
		out.Mode = adminv1.BudgetMode_BUDGET_MODE_ESTIMATE
	}
	if l.Shortfall == kernel.Reject {
		out.Shortfall = adminv1.Shortfall_SHORTFALL_REJECT
	}
	for _, b := range l.Budgets {
		w := &adminv1.BudgetWindow{Limit: moneyOut(b.Limit), Period: periodsOut[b.Period.Kind], Soft: b.Soft}
		if loc := b.Period.Location; loc != nil && loc != time.UTC && loc.String() != "UTC" {
			w.TimeZone = loc.String()
		}
		if b.Period.Kind == kernel.PeriodRolling {
			w.Every = durationpb.New(b.Period.Every)
			w.Anchor = tsOut(b.Period.Anchor)
		}
		out.Budgets = append(out.Budgets, w)
	}
	if r := l.Run; r != nil {
		out.Run = &adminv1.RunPolicy{Budget: moneyOut(r.Budget), Rpm: r.RPM}
		if r.TTL > 0 {
			out.Run.Ttl = durationpb.New(r.TTL)
		}
	}
	return out
}

// applyLimitsMask copies the limits fields named by the update_mask paths
// ("limits" or "limits.<field>") from src into dst.
func applyLimitsMask(dst *kernel.Limits, src kernel.Limits, paths []string) {
	for _, p := range paths {
		switch p {
		case "limits":
			*dst = src
		case "limits.budgets":
			dst.Budgets = src.Budgets
		case "limits.rpm":
			dst.RPM = src.RPM
		case "limits.tpm":
			dst.TPM = src.TPM
		case "limits.max_parallel":
			dst.MaxParallel = src.MaxParallel
		case "limits.models":
			dst.Models = src.Models
		case "limits.expires_at":
			dst.ExpiresAt = src.ExpiresAt
		case "limits.mode":
			dst.Mode = src.Mode
		case "limits.shortfall":
			dst.Shortfall = src.Shortfall
		case "limits.run":
			dst.Run = src.Run
		}
	}
}

// hasPath reports whether paths names field.
func hasPath(paths []string, field string) bool { return slices.Contains(paths, field) }

// limitsPaths is the subset of paths that change limits.
func limitsPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "limits" || strings.HasPrefix(p, "limits.") {
			out = append(out, p)
		}
	}
	return out
}

// withinLimits checks that a scope's limits do not exceed a ceiling (a team
// admin may not give a key more than its team has). A zero ceiling value means
// no ceiling; a zero value under a non-zero ceiling means "unlimited", which
// exceeds it.
func withinLimits(l, ceiling kernel.Limits, ceilingName string) error {
	over := func(field string, v, c int64) error {
		if c > 0 && (v == 0 || v > c) {
			return fmt.Errorf("%w: limits.%s %s is above the %s's %d", ErrDenied, field, unlimited(v), ceilingName, c)
		}
		return nil
	}
	if err := over("rpm", l.RPM, ceiling.RPM); err != nil {
		return err
	}
	if err := over("tpm", l.TPM, ceiling.TPM); err != nil {
		return err
	}
	if err := over("max_parallel", l.MaxParallel, ceiling.MaxParallel); err != nil {
		return err
	}
	if len(ceiling.Budgets) > 0 {
		lowest := ceiling.Budgets[0].Limit
		for _, b := range ceiling.Budgets[1:] {
			lowest = min(lowest, b.Limit)
		}
		if len(l.Budgets) == 0 {
			return fmt.Errorf("%w: limits.budgets: the %s has a budget of $%s; give the key a budget no larger",
				ErrDenied, ceilingName, dollars(lowest))
		}
		for i, b := range l.Budgets {
			if b.Limit > lowest {
				return fmt.Errorf("%w: limits.budgets[%d] $%s is above the %s's budget of $%s",
					ErrDenied, i, dollars(b.Limit), ceilingName, dollars(lowest))
			}
		}
	}
	if len(ceiling.Models) > 0 {
		if len(l.Models) == 0 {
			return fmt.Errorf("%w: limits.models: the %s allows only %v; list the key's models", ErrDenied, ceilingName, ceiling.Models)
		}
		for _, m := range l.Models {
			// A pattern of the ceiling covers a name, or a narrower pattern
			// (its '*' matched as a character: "claude-*" covers "claude-s*").
			if !slices.ContainsFunc(ceiling.Models, func(c string) bool { return modelpattern.Match(c, m) }) {
				return fmt.Errorf("%w: limits.models: %q is not allowed for the %s", ErrDenied, m, ceilingName)
			}
		}
	}
	if !ceiling.ExpiresAt.IsZero() && (l.ExpiresAt.IsZero() || l.ExpiresAt.After(ceiling.ExpiresAt)) {
		return fmt.Errorf("%w: limits.expires_at must be no later than the %s's %s", ErrDenied, ceilingName,
			ceiling.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

func unlimited(v int64) string {
	if v == 0 {
		return "unlimited"
	}
	return fmt.Sprint(v)
}
