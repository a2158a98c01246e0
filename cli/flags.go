package cli

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// dollars parses a dollar amount exactly into a Money.
func dollars(flagName, s string) (*adminv1.Money, error) {
	m, err := adminv1.DollarsMoney(s)
	if err != nil {
		return nil, fmt.Errorf("%w: --%s %q: %w", ErrUsage, flagName, s, err)
	}
	return m, nil
}

// parseDuration is time.ParseDuration plus whole days ("30d").
func parseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration such as 30d or 12h", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 30d or 12h", s)
	}
	return v, nil
}

// parseWhen reads a point in time: RFC 3339, a date (UTC midnight), or a
// duration relative to now (ago when past is true, from now otherwise).
func parseWhen(flagName, s string, now time.Time, past bool) (*timestamppb.Timestamp, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return timestamppb.New(t), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return timestamppb.New(t), nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return nil, fmt.Errorf("%w: --%s %q: give a date (2026-01-31), an RFC 3339 time or a duration (30d, 12h)", ErrUsage, flagName, s)
	}
	if past {
		return timestamppb.New(now.Add(-d)), nil
	}
	return timestamppb.New(now.Add(d)), nil
}

var periods = map[string]adminv1.PeriodKind{
	"total": adminv1.PeriodKind_PERIOD_KIND_TOTAL, "daily": adminv1.PeriodKind_PERIOD_KIND_DAILY,
	"weekly": adminv1.PeriodKind_PERIOD_KIND_WEEKLY, "monthly": adminv1.PeriodKind_PERIOD_KIND_MONTHLY,
	"rolling": adminv1.PeriodKind_PERIOD_KIND_ROLLING,
}

// parsePeriod reads total|daily|weekly|monthly|rolling:DURATION, where the
// calendar periods may name a time zone: daily@Europe/Paris.
func parsePeriod(s string) (*adminv1.BudgetWindow, error) {
	s, tz, _ := strings.Cut(s, "@")
	name, every, hasEvery := strings.Cut(s, ":")
	kind, ok := periods[name]
	if !ok {
		return nil, fmt.Errorf("%w: --budget-period %q: use total, daily, weekly, monthly (optionally @TIME/ZONE, e.g. monthly@Europe/Paris) or rolling:DURATION (e.g. rolling:7d)", ErrUsage, s)
	}
	w := &adminv1.BudgetWindow{Period: kind, TimeZone: tz}
	if kind == adminv1.PeriodKind_PERIOD_KIND_ROLLING {
		d, err := parseDuration(every)
		if !hasEvery || err != nil {
			return nil, fmt.Errorf("%w: --budget-period %q: a rolling period needs its length, e.g. rolling:7d", ErrUsage, s)
		}
		w.Every = durationpb.New(d)
	} else if hasEvery {
		return nil, fmt.Errorf("%w: --budget-period %q: only rolling periods take a length", ErrUsage, s)
	}
	return w, nil
}

// limitsFlags are the flags that set limits, shared by keys, users, teams,
// orgs and customers.
type limitsFlags struct {
	budgets, periods multi
	softBudgets      multi
	clearBudgets     bool
	rpm, tpm, par    int64
	models           string
	expires          string
	mode, shortfall  string
	runBudget        string // --run-budget: each run's budget (dollars)
	runRPM           int64
	runTTL           string
}

func (l *limitsFlags) register(fs *flag.FlagSet) {
	fs.Var(&l.budgets, "budget", "budget in dollars, e.g. 10.50 or 10.50/monthly (repeatable)")
	fs.Var(&l.periods, "budget-period", "period of the matching --budget: total, daily, weekly, monthly or rolling:DURATION (default total)")
	fs.Var(&l.softBudgets, "soft-budget", "a soft budget in dollars, e.g. 50/monthly: never refuses, warns (x-tollgate-budget-warning) and alerts once reached (repeatable)")
	fs.BoolVar(&l.clearBudgets, "clear-budgets", false, "remove every budget (update)")
	fs.Int64Var(&l.rpm, "rpm", 0, "requests per minute (0: no limit)")
	fs.Int64Var(&l.tpm, "tpm", 0, "tokens per minute (0: no limit)")
	fs.Int64Var(&l.par, "max-parallel", 0, "requests in flight at once (0: no limit)")
	fs.StringVar(&l.models, "models", "", "allowed public model names, comma-separated (empty: all)")
	fs.StringVar(&l.expires, "expires", "", "expiry: a date, an RFC 3339 time or a duration from now (30d); \"never\" clears it")
	fs.StringVar(&l.mode, "budget-mode", "", "strict (never overspend, default) or estimate")
	fs.StringVar(&l.runBudget, "run-budget", "", "each run's budget in dollars (requests with x-tollgate-run-id), e.g. 2.50")
	fs.Int64Var(&l.runRPM, "run-rpm", 0, "each run's requests per minute (0: no limit)")
	fs.StringVar(&l.runTTL, "run-ttl", "", "how long an idle run's counters are kept, e.g. 1h (default 1h)")
	fs.StringVar(&l.shortfall, "shortfall", "", "when a strict budget cannot cover max_tokens: clamp (default) or reject")
}

// flagPaths maps limits flags to update_mask paths.
var flagPaths = map[string]string{
	"budget": "limits.budgets", "budget-period": "limits.budgets", "clear-budgets": "limits.budgets", "soft-budget": "limits.budgets",
	"rpm": "limits.rpm", "tpm": "limits.tpm", "max-parallel": "limits.max_parallel", "models": "limits.models",
	"expires": "limits.expires_at", "budget-mode": "limits.mode", "shortfall": "limits.shortfall",
	"run-budget": "limits.run", "run-rpm": "limits.run", "run-ttl": "limits.run",
}

// paths is the update mask of the limits flags given.
func (l *limitsFlags) paths(set map[string]bool) []string {
	var out []string
	for f, p := range flagPaths {
		if set[f] && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

func (l *limitsFlags) build(now time.Time) (*adminv1.Limits, error) {
	out := &adminv1.Limits{Rpm: l.rpm, Tpm: l.tpm, MaxParallel: l.par}
	if len(l.periods) > len(l.budgets) {
		return nil, fmt.Errorf("%w: %d --budget-period for %d --budget", ErrUsage, len(l.periods), len(l.budgets))
	}
	if l.clearBudgets && len(l.budgets)+len(l.softBudgets) > 0 {
		return nil, fmt.Errorf("%w: --clear-budgets and --budget together", ErrUsage)
	}
	for i, b := range l.budgets {
		amount, period, inline := strings.Cut(b, "/")
		if !inline {
			period = "total"
			if i < len(l.periods) {
				period = l.periods[i]
			}
		}
		w, err := parsePeriod(period)
		if err != nil {
			return nil, err
		}
		if w.Limit, err = dollars("budget", amount); err != nil {
			return nil, err
		}
		out.Budgets = append(out.Budgets, w)
	}
	for _, b := range l.softBudgets {
		amount, period, inline := strings.Cut(b, "/")
		if !inline {
			period = "total"
		}
		w, err := parsePeriod(period)
		if err != nil {
			return nil, err
		}
		if w.Limit, err = dollars("soft-budget", amount); err != nil {
			return nil, err
		}
		w.Soft = true
		out.Budgets = append(out.Budgets, w)
	}
	if l.runBudget != "" || l.runRPM != 0 || l.runTTL != "" {
		out.Run = &adminv1.RunPolicy{Rpm: l.runRPM}
		if l.runBudget != "" {
			var err error
			if out.Run.Budget, err = dollars("run-budget", l.runBudget); err != nil {
				return nil, err
			}
		}
		if l.runTTL != "" {
			d, err := parseDuration(l.runTTL)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%w: --run-ttl %q: give a duration such as 1h or 30m", ErrUsage, l.runTTL)
			}
			out.Run.Ttl = durationpb.New(d)
		}
	}
	out.Models = splitList(l.models)
	if l.expires != "" && l.expires != "never" {
		t, err := parseWhen("expires", l.expires, now, false)
		if err != nil {
			return nil, err
		}
		out.ExpiresAt = t
	}
	switch l.mode {
	case "":
	case "strict":
		out.Mode = adminv1.BudgetMode_BUDGET_MODE_STRICT
	case "estimate":
		out.Mode = adminv1.BudgetMode_BUDGET_MODE_ESTIMATE
	default:
		return nil, fmt.Errorf("%w: --budget-mode %q: use strict or estimate", ErrUsage, l.mode)
	}
	switch l.shortfall {
	case "":
	case "clamp":
		out.Shortfall = adminv1.Shortfall_SHORTFALL_CLAMP
	case "reject":
		out.Shortfall = adminv1.Shortfall_SHORTFALL_REJECT
	default:
		return nil, fmt.Errorf("%w: --shortfall %q: use clamp or reject", ErrUsage, l.shortfall)
	}
	return out, nil
}

// updateMask builds the mask of an update from plain field flags (flag name →
// path; flags may share a path, named once) and the limits flags; it fails when
// nothing would change.
func updateMask(set map[string]bool, fields map[string]string, l *limitsFlags) (*fieldmaskpb.FieldMask, error) {
	var paths []string
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if set[f] && !slices.Contains(paths, fields[f]) {
			paths = append(paths, fields[f])
		}
	}
	if l != nil {
		paths = append(paths, l.paths(set)...)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: nothing to change: give at least one flag (see -h)", ErrUsage)
	}
	return &fieldmaskpb.FieldMask{Paths: paths}, nil
}

// parseMeta reads --meta key=value pairs.
func parseMeta(pairs []string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%w: --meta %q: use key=value", ErrUsage, p)
		}
		out[k] = v
	}
	return out, nil
}

// pageFlags are the paging flags of list commands: without --page-size every
// page is fetched.
type pageFlags struct {
	size  int
	token string
}

func (p *pageFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&p.size, "page-size", 0, "fetch one page of this size (default: every page)")
	fs.StringVar(&p.token, "page-token", "", "page to fetch (printed after a page)")
}

// each fetches pages with fetch(token, size) until the last one, or one page
// when --page-size or --page-token is given; it prints the next token then.
func (p *pageFlags) each(r *runner, fetch func(token string, size int32) (string, error)) error {
	token := p.token
	one := p.size > 0 || p.token != ""
	for {
		next, err := fetch(token, int32(p.size))
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if one {
			_, _ = fmt.Fprintf(r.errOut, "more: --page-token %s\n", next)
			return nil
		}
		token = next
	}
}
