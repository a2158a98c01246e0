package gateway

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/alert"
	"github.com/tollgate-ai/tollgate/kernel"
)

// DefaultAlertEvery is how often budget thresholds are checked.
const DefaultAlertEvery = 30 * time.Second

// startAlerts checks, every Options.AlertEvery, every budget window of the
// current snapshot against the alert thresholds (alert.DefaultThresholds),
// with the counters' spend, and every key that expires within
// ExpiringAlertWithin; the Notifier fires each once across replicas.
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
	now := g.now()
	var usage alert.UsageFunc = g.Accountant.Usage
	if _, err := g.alerts.CheckBudgets(ctx, now, s.Budgeted, nil, usage); err != nil {
		g.log.Warn("budget alerts", "err", err)
	}
	keys := make([]kernel.Scope, 0, 16)
	seen := make(map[string]bool, len(s.keys))
	for _, e := range s.keys {
		if len(e.principal.Scopes) == 0 {
			continue
		}
		k := e.principal.Scopes[0]
		if k.Limits == nil || k.Limits.ExpiresAt.IsZero() || seen[k.Ref.ID] {
			continue
		}
		seen[k.Ref.ID] = true
		keys = append(keys, k)
	}
	if _, err := g.alerts.CheckExpiring(ctx, now, keys, ExpiringAlertWithin); err != nil {
		g.log.Warn("key expiry alerts", "err", err)
	}
}

// ExpiringAlertWithin is how long before its expiry a key alerts.
const ExpiringAlertWithin = 7 * 24 * time.Hour
