package gateway

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/alert"
)

// DefaultAlertEvery is how often budget thresholds are checked.
const DefaultAlertEvery = 30 * time.Second

// startAlerts checks, every Options.AlertEvery, every budget window of the
// current snapshot against the alert thresholds (alert.DefaultThresholds),
// with the counters' spend; the Notifier fires each once across replicas.
func (g *Gateway) startAlerts(ctx context.Context) error {
	if g.alerts == nil {
		return nil
	}
	every := g.alertEvery
	if every <= 0 {
		every = DefaultAlertEvery
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				g.checkAlerts(ctx)
			}
		}
	}()
	return nil
}

// checkAlerts runs one check of the budget thresholds.
func (g *Gateway) checkAlerts(ctx context.Context) {
	s := g.Catalog.Snapshot()
	if s == nil {
		return
	}
	var usage alert.UsageFunc = g.Accountant.Usage
	if _, err := g.alerts.CheckBudgets(ctx, g.now(), s.Budgeted, nil, usage); err != nil {
		g.log.Warn("budget alerts", "err", err)
	}
}
