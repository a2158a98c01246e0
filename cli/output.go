package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// emit prints a response: as JSON with -o json, else with table.
func (r *runner) emit(m proto.Message, table func()) error {
	if !r.json {
		table()
		return nil
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	// protojson varies its whitespace on purpose from build to build;
	// json.Indent makes it stable for scripts that grep or diff it.
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	out.WriteByte('\n')
	_, err = r.out.Write(out.Bytes())
	return err
}

// table prints aligned columns.
func (r *runner) table(header []string, rows [][]string) {
	w := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, row := range rows {
		_, _ = fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	_ = w.Flush()
}

// fields prints one object as aligned "NAME  value" lines.
func (r *runner) fields(pairs [][2]string) {
	w := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', 0)
	for _, p := range pairs {
		_, _ = fmt.Fprintf(w, "%s\t%s\n", p[0], p[1])
	}
	_ = w.Flush()
}

// usd shows money in dollars with at least two decimals: $10.50, $0.000125.
func usd(m *adminv1.Money) string {
	if m == nil {
		return "-"
	}
	s := m.GetDollars()
	if s == "" {
		s = adminv1.NewMoney(m.GetNanoUsd()).GetDollars()
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	for len(frac) < 2 {
		frac += "0"
	}
	out := "$" + whole + "." + frac
	if neg {
		out = "-" + out
	}
	return out
}

func when(t *timestamppb.Timestamp) string {
	if t == nil {
		return "-"
	}
	return t.AsTime().UTC().Format(time.RFC3339)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func num(n int64) string {
	if n == 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}

var periodNames = map[adminv1.PeriodKind]string{
	adminv1.PeriodKind_PERIOD_KIND_UNSPECIFIED: "total", adminv1.PeriodKind_PERIOD_KIND_TOTAL: "total",
	adminv1.PeriodKind_PERIOD_KIND_DAILY: "daily", adminv1.PeriodKind_PERIOD_KIND_WEEKLY: "weekly",
	adminv1.PeriodKind_PERIOD_KIND_MONTHLY: "monthly", adminv1.PeriodKind_PERIOD_KIND_ROLLING: "rolling",
}

// budgets shows budget windows: "$10.50/monthly, $1.00/daily (soft)".
func budgets(l *adminv1.Limits) string {
	var parts []string
	for _, b := range l.GetBudgets() {
		p := periodNames[b.GetPeriod()]
		if b.GetPeriod() == adminv1.PeriodKind_PERIOD_KIND_ROLLING {
			p += ":" + b.GetEvery().AsDuration().String()
		}
		if tz := b.GetTimeZone(); tz != "" {
			p += "@" + tz
		}
		if b.GetSoft() {
			p += " (soft)"
		}
		parts = append(parts, usd(b.GetLimit())+"/"+p)
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func models(l *adminv1.Limits) string {
	if len(l.GetModels()) == 0 {
		return "all"
	}
	return strings.Join(l.GetModels(), ",")
}

// limitsFields are the rows describing limits in a detail view.
func limitsFields(l *adminv1.Limits) [][2]string {
	mode := "strict"
	if l.GetMode() == adminv1.BudgetMode_BUDGET_MODE_ESTIMATE {
		mode = "estimate"
	}
	shortfall := "clamp"
	if l.GetShortfall() == adminv1.Shortfall_SHORTFALL_REJECT {
		shortfall = "reject"
	}
	return [][2]string{
		{"BUDGETS", budgets(l)},
		{"BUDGET MODE", mode},
		{"SHORTFALL", shortfall},
		{"RPM", num(l.GetRpm())},
		{"TPM", num(l.GetTpm())},
		{"MAX PARALLEL", num(l.GetMaxParallel())},
		{"MODELS", models(l)},
		{"EXPIRES", when(l.GetExpiresAt())},
	}
}
