package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

// Ledger reads ledger rows (store.Spend's Entries).
type Ledger interface {
	Entries(ctx context.Context, f store.LedgerFilter) ([]store.LedgerEntry, error)
}

// Target is one provider to reconcile: its report and its deployments.
type Target struct {
	Provider    string
	Source      Source
	Deployments map[string]Deployment // by deployment id
}

// Run reconciles one target over the UTC days [from, to): it fetches the
// provider's report and the ledger rows of those days, and compares them.
func Run(ctx context.Context, t Target, led Ledger, from, to, now time.Time) (*Result, error) {
	if err := CheckRange(from, to); err != nil {
		return nil, err
	}
	rep, err := t.Source.Fetch(ctx, from, to)
	if err != nil {
		return nil, fmt.Errorf("provider %q: %w", t.Provider, err)
	}
	rows, err := ledgerRows(ctx, led, from, to, t.Deployments)
	if err != nil {
		return nil, fmt.Errorf("reconcile: reading the ledger: %w", err)
	}
	res := Compare(rep, rows, t.Deployments, from, to)
	res.Provider, res.RanAt = t.Provider, now.UTC()
	return res, nil
}

// ledgerRows reads the rows of the deployments that ended in [from, to),
// page by page.
func ledgerRows(ctx context.Context, led Ledger, from, to time.Time, deployments map[string]Deployment) ([]store.LedgerEntry, error) {
	f := store.LedgerFilter{Since: from, Until: to, Limit: 1000}
	var out []store.LedgerEntry
	for {
		rows, err := led.Entries(ctx, f)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			if _, ok := deployments[rows[i].Deployment]; ok {
				out = append(out, rows[i])
			}
		}
		if len(rows) < f.Limit {
			return out, nil
		}
		f.After = rows[len(rows)-1].RequestID
	}
}
