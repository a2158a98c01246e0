package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tollgate-ai/tollgate/alert"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/observe"
	"github.com/tollgate-ai/tollgate/store"
)

// The metrics count the alerts this replica fires and their deliveries.
var _ alert.Observer = (*observe.Metrics)(nil)

// DefaultAlertEvery is how often budget thresholds are checked.
const DefaultAlertEvery = 30 * time.Second

// startAlerts checks, every Options.AlertEvery, every budget window of the
// current snapshot against the alert thresholds (alert.DefaultThresholds),
// with the counters' spend, and every key that expires within
// ExpiringAlertWithin; the Notifier fires each once across replicas.
//
// The sinks and settings managed through the admin API (AlertService) are
// read from the store at each check, so every replica delivers to the same
// sinks; when the store keeps the alert log (store.Alerts), it is what
// claims an alert, at most once across the replicas sharing it.
func (g *Gateway) startAlerts(ctx context.Context) error {
	if g.alerts == nil {
		g.alerts = &alert.Notifier{Claimer: &alert.MemoryClaimer{Now: g.now}, Audit: g.Store, Log: g.log, Now: g.now}
	}
	if j, ok := g.Store.(store.Alerts); ok && g.alerts.Journal == nil {
		g.alerts.Journal = j
	}
	if g.alerts.Observer == nil && g.obs != nil && g.obs.metrics != nil {
		g.alerts.Observer = g.obs.metrics
	}
	if g.alerts.SinksFrom == nil {
		g.alerts.SinksFrom = g.storedSinks
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
	set, err := alertSettings(ctx, g.Store)
	if err != nil {
		g.log.Warn("alert settings", "err", err)
	}
	var usage alert.UsageFunc = g.Accountant.Usage
	if _, err := g.alerts.CheckBudgets(ctx, now, s.Budgeted, set.Thresholds, usage); err != nil {
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
	within := set.ExpiringWithin
	if within <= 0 {
		within = ExpiringAlertWithin
	}
	if _, err := g.alerts.CheckExpiring(ctx, now, keys, within); err != nil {
		g.log.Warn("key expiry alerts", "err", err)
	}
	factor := set.AnomalyFactor
	if factor <= 0 {
		factor = g.anomalyFactor
	}
	if err := g.checkAnomalies(ctx, now, factor); err != nil {
		g.log.Warn("spend anomaly alerts", "err", err)
	}
}

// AnomalyTrailing is the history a key's current hour of spend is compared
// with: the average of these hours is its usual rate.
const AnomalyTrailing = 24 * time.Hour

// DefaultAnomalyFloor is the least spend of an hour that can be an anomaly:
// a key's first cents after a quiet day are not.
const DefaultAnomalyFloor = kernel.Dollar

// checkAnomalies fires a spend_anomaly alert for every key whose spend in
// the current hour (so far) is above factor × its average over the
// AnomalyTrailing hours before, and at least the floor: once per key and
// hour across replicas. The spend is the ledger's hourly totals (one query
// for every key); factor 0 is off.
func (g *Gateway) checkAnomalies(ctx context.Context, now time.Time, factor int) error {
	by, ok := g.Store.(store.SpendByScope)
	if !ok || factor <= 0 {
		return nil
	}
	hour := now.UTC().Truncate(time.Hour)
	since := hour.Add(-AnomalyTrailing)
	series, err := by.SeriesByScope(ctx, kernel.ScopeKey, since, hour.Add(time.Hour), time.Hour)
	if err != nil {
		return err
	}
	floor := g.anomalyFloor
	if floor <= 0 {
		floor = DefaultAnomalyFloor
	}
	ids := slices.Sorted(maps.Keys(series))
	hourly := make([]kernel.Money, AnomalyTrailing/time.Hour+1) // the trailing hours, then the current one
	var errs []error
	for _, id := range ids {
		clear(hourly)
		for _, p := range series[id] {
			if i := int(p.Start.Sub(since) / time.Hour); i >= 0 && i < len(hourly) {
				hourly[i] += p.Cost
			}
		}
		ref := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: id}
		if _, err := g.alerts.CheckAnomaly(ctx, now, ref, hour, hourly, int64(factor), floor); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ExpiringAlertWithin is how long before its expiry a key alerts.
const ExpiringAlertWithin = 7 * 24 * time.Hour

// alertSettings reads the alert settings (zero when none are stored).
func alertSettings(ctx context.Context, st store.Config) (store.AlertSettings, error) {
	set, _, err := store.Get[store.AlertSettings](ctx, st, store.AlertSettingsID)
	if errors.Is(err, store.ErrNotFound) {
		return store.AlertSettings{}, nil
	}
	return set, err
}

// storedSinks are the alert sinks of the store, their secrets unsealed; a
// sink that cannot be built is skipped and reported.
func (g *Gateway) storedSinks(ctx context.Context) ([]alert.Sink, error) {
	stored, err := store.List[store.AlertSink](ctx, g.Store)
	if err != nil {
		return nil, err
	}
	out := make([]alert.Sink, 0, len(stored))
	var errs []error
	for i := range stored {
		sk := &stored[i]
		var secret []byte
		if len(sk.Secret) > 0 {
			if secret, err = g.Sealer.Open(sk.Secret); err != nil {
				errs = append(errs, fmt.Errorf("alert sink %s: open its secret: %w", sk.ID, err))
				continue
			}
		}
		s, err := alert.SinkOf(sk.Kind, sk.ID, sk.URL, secret)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errors.Join(errs...)
}
