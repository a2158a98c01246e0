package cli

import (
	"encoding/csv"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

func init() {
	register(
		&command{noun: "reconcile", verb: "run", help: "compare the ledger with a provider's own usage and cost reports (--provider, --from, --to; also `tollgate reconcile --provider …`)", setup: reconcileRun},
		&command{noun: "reconcile", verb: "runs", help: "show the last scheduled reconciliation of each provider", setup: reconcileRuns},
	)
}

func reconcileRun(fs *flag.FlagSet) func(*runner, []string) error {
	provider := fs.String("provider", "", "provider id (required; it needs an admin credential: provider update --admin-credential-env)")
	from := fs.String("from", "", "first UTC day, YYYY-MM-DD (default: yesterday)")
	to := fs.String("to", "", "last UTC day, YYYY-MM-DD, included (default: --from)")
	format := fs.String("format", "table", "table, json or csv")
	return func(r *runner, _ []string) error {
		if *provider == "" {
			return fmt.Errorf("%w: --provider is required", ErrUsage)
		}
		if *format != "table" && *format != "json" && *format != "csv" {
			return fmt.Errorf("%w: --format must be table, json or csv, not %q", ErrUsage, *format)
		}
		if *from == "" {
			*from = r.now().UTC().Add(-24 * time.Hour).Format(time.DateOnly)
		}
		resp, err := adminv1.NewReconcileServiceClient(r.conn).Reconcile(r.ctx, &adminv1.ReconcileRequest{Provider: *provider, From: *from, To: *to})
		if err != nil {
			return err
		}
		if *format == "json" {
			r.json = true
		}
		if *format == "csv" && !r.json {
			return reconcileCSV(r, resp.GetReport())
		}
		return r.emit(resp, func() { reconcileTable(r, resp.GetReport()) })
	}
}

func reconcileRuns(*flag.FlagSet) func(*runner, []string) error {
	return func(r *runner, _ []string) error {
		resp, err := adminv1.NewReconcileServiceClient(r.conn).ListReconcileRuns(r.ctx, &adminv1.ListReconcileRunsRequest{})
		if err != nil {
			return err
		}
		return r.emit(resp, func() {
			var rows [][]string
			for _, run := range resp.GetRuns() {
				state := "ok"
				switch {
				case run.GetError() != "":
					state = "error: " + run.GetError()
				case run.GetAlert():
					state = "ALERT"
				}
				rows = append(rows, []string{
					run.GetProvider(), run.GetRanAt().AsTime().Format(time.RFC3339), orDash(run.GetFrom()), orDash(run.GetTo()),
					pct(run.GetWorstRel()), usd(run.GetDrift().GetCost()), state,
				})
			}
			r.table([]string{"PROVIDER", "RAN AT", "FROM", "TO", "WORST CELL", "COST DRIFT", "STATE"}, rows)
		})
	}
}

// pct shows a relative drift as a signed percentage.
func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + "%" }

// pair shows a ledger value beside the provider's: "ledger / provider".
func pair(ledger, provider string) string { return ledger + " / " + provider }

func reconcileTable(r *runner, rep *adminv1.ReconcileReport) {
	provRequests := func(t *adminv1.ReconcileTotals) string {
		if !rep.GetRequestsReported() {
			return "-"
		}
		return strconv.FormatInt(t.GetRequests(), 10)
	}
	var rows [][]string
	for _, c := range rep.GetCells() {
		d := c.GetDrift()
		reqDrift := "-"
		if rep.GetRequestsReported() {
			reqDrift = strconv.FormatInt(d.GetRequests(), 10)
		}
		rows = append(rows, []string{
			c.GetDay(), c.GetModel(), orDash(strings.Join(c.GetPublicModels(), ",")),
			pair(strconv.FormatInt(c.GetLedger().GetRequests(), 10), provRequests(c.GetProvider())), reqDrift,
			pair(strconv.FormatInt(tokens(c.GetLedger()), 10), strconv.FormatInt(tokens(c.GetProvider()), 10)),
			strconv.FormatInt(d.GetTokens(), 10), pct(d.GetTokensRel()),
			pair(usd(c.GetLedger().GetCost()), usd(c.GetProvider().GetCost())), usd(d.GetCost()), pct(d.GetCostRel()),
			strconv.Itoa(len(c.GetRequestIds())),
		})
	}
	r.table([]string{"DAY", "MODEL", "PUBLIC", "REQUESTS L/P", "Δ REQ", "TOKENS L/P", "Δ TOKENS", "Δ TOK %", "COST L/P", "Δ COST", "Δ COST %", "ROWS"}, rows)
	d := rep.GetDrift()
	_, _ = fmt.Fprintf(r.out, "\n%s %s..%s: ledger %s, provider %s, drift %s (%s); tokens drift %d (%s); worst cell %s\n",
		rep.GetProvider(), rep.GetFrom(), rep.GetTo(), usd(rep.GetLedger().GetCost()), usd(rep.GetReported().GetCost()),
		usd(d.GetCost()), pct(d.GetCostRel()), d.GetTokens(), pct(d.GetTokensRel()), pct(rep.GetWorstRel()))
	if !rep.GetRequestsReported() {
		_, _ = fmt.Fprintln(r.out, "The provider's report does not count requests: request drift is not computed.")
	}
}

func tokens(t *adminv1.ReconcileTotals) int64 {
	return t.GetInputTokens() + t.GetCachedInputTokens() + t.GetCacheWriteTokens() + t.GetOutputTokens()
}

func reconcileCSV(r *runner, rep *adminv1.ReconcileReport) error {
	w := csv.NewWriter(r.out)
	_ = w.Write([]string{
		"day", "model", "public_models", "ledger_requests", "provider_requests", "requests_drift", "requests_rel",
		"ledger_tokens", "provider_tokens", "tokens_drift", "tokens_rel",
		"ledger_cost_usd", "provider_cost_usd", "cost_drift_usd", "cost_rel", "request_ids",
	})
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, c := range rep.GetCells() {
		d := c.GetDrift()
		provReq := i(c.GetProvider().GetRequests())
		if !rep.GetRequestsReported() {
			provReq = ""
		}
		_ = w.Write([]string{
			c.GetDay(), c.GetModel(), strings.Join(c.GetPublicModels(), " "),
			i(c.GetLedger().GetRequests()), provReq, i(d.GetRequests()), f(d.GetRequestsRel()),
			i(tokens(c.GetLedger())), i(tokens(c.GetProvider())), i(d.GetTokens()), f(d.GetTokensRel()),
			c.GetLedger().GetCost().GetDollars(), c.GetProvider().GetCost().GetDollars(), d.GetCost().GetDollars(), f(d.GetCostRel()),
			strings.Join(c.GetRequestIds(), " "),
		})
	}
	w.Flush()
	return w.Error()
}
