package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/reconcile"
)

// The scheduled reconciliation (docs/reconcile.md): every
// Config.Reconcile.Interval, each provider with an admin credential is
// reconciled over the last Config.Reconcile.Days whole UTC days; the run is
// stored (the console and `tollgate reconcile runs` show it), measured
// (tollgate_reconcile_*), and a drift above Config.Reconcile.Threshold is
// logged at warn level and raises tollgate_reconcile_alert. Every replica
// runs the job: the providers' reports are read-only, so replicas only
// repeat the same answer.

// reconcileMetrics are the Prometheus series of the job.
type reconcileMetrics struct {
	drift   *prometheus.GaugeVec   // provider, measure: the range's relative drift
	worst   *prometheus.GaugeVec   // provider: the worst cell's relative drift
	cost    *prometheus.GaugeVec   // provider: the range's cost drift in dollars
	alert   *prometheus.GaugeVec   // provider: 1 while the last run alerted
	runs    *prometheus.CounterVec // provider, result: ok, alert, error
	lastRun *prometheus.GaugeVec   // provider: Unix time of the last run
}

func newReconcileMetrics(reg prometheus.Registerer) (*reconcileMetrics, error) {
	m := &reconcileMetrics{
		drift: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_reconcile_drift_ratio",
			Help: "Relative drift (provider - ledger over the larger) of the last reconciliation's whole range, by measure (tokens, requests, cost).",
		}, []string{"provider", "measure"}),
		worst: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_reconcile_worst_cell_drift_ratio",
			Help: "Largest relative drift of any day x model cell of the last reconciliation.",
		}, []string{"provider"}),
		cost: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_reconcile_cost_drift_usd",
			Help: "Cost the provider reported minus the ledger's, in dollars, over the last reconciliation's range.",
		}, []string{"provider"}),
		alert: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_reconcile_alert",
			Help: "1 when the last reconciliation's worst cell drifted above the threshold.",
		}, []string{"provider"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_reconcile_runs_total",
			Help: "Scheduled reconciliations by result (ok, alert, error).",
		}, []string{"provider", "result"}),
		lastRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tollgate_reconcile_last_run_timestamp_seconds",
			Help: "Unix time of the last scheduled reconciliation.",
		}, []string{"provider"}),
	}
	for _, c := range []prometheus.Collector{m.drift, m.worst, m.cost, m.alert, m.runs, m.lastRun} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *reconcileMetrics) observe(provider string, res *reconcile.Result, alert bool, err error, now time.Time) {
	m.lastRun.WithLabelValues(provider).Set(float64(now.Unix()))
	if err != nil {
		m.runs.WithLabelValues(provider, "error").Inc()
		return
	}
	d := res.Drift()
	m.drift.WithLabelValues(provider, "tokens").Set(d.TokensRel)
	m.drift.WithLabelValues(provider, "requests").Set(d.RequestsRel)
	m.drift.WithLabelValues(provider, "cost").Set(d.CostRel)
	m.worst.WithLabelValues(provider).Set(res.Worst())
	m.cost.WithLabelValues(provider).Set(float64(d.Cost) / float64(kernel.Dollar))
	result, flag := "ok", 0.0
	if alert {
		result, flag = "alert", 1
	}
	m.alert.WithLabelValues(provider).Set(flag)
	m.runs.WithLabelValues(provider, result).Inc()
}

// reconcileJob is the scheduled job over this gateway's store; metrics may
// be nil.
func (g *Gateway) reconcileJob(metrics *reconcileMetrics) *reconcile.Job {
	targets := func(ctx context.Context) ([]reconcile.Target, error) {
		return admin.ReconcileTargets(ctx, g.Store, g.Sealer)
	}
	obs := reconcile.ObserverFunc(func(ctx context.Context, provider string, res *reconcile.Result, alert bool, err error) {
		now := g.now()
		if metrics != nil {
			metrics.observe(provider, res, alert, err, now)
		}
		if rerr := admin.RecordReconcileRun(ctx, g.Store, provider, res, alert, err, now); rerr != nil && !errors.Is(rerr, context.Canceled) {
			g.log.ErrorContext(ctx, "reconcile: storing the run", "provider", provider, "error", rerr)
		}
	})
	return reconcile.NewJob(g.Config.Reconcile, targets, g.Store, obs, reconcile.WithClock(g.now), reconcile.WithLogger(g.log))
}

// startReconcile starts the scheduled reconciliation when configured.
func (g *Gateway) startReconcile(ctx context.Context) {
	if g.Config.Reconcile.Interval <= 0 {
		return
	}
	var metrics *reconcileMetrics
	if g.obs != nil && g.obs.metrics != nil {
		var err error
		if metrics, err = newReconcileMetrics(g.obs.metrics.Registry()); err != nil {
			g.log.Error("reconcile: metrics", "error", err)
		}
	}
	g.reconciler = g.reconcileJob(metrics)
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.reconciler.Loop(ctx) }()
}

// ReconcileNow runs the scheduled reconciliation once, now, as its next tick
// would (stored, measured, alerted); it returns how many providers alerted
// or failed. Without a schedule (Config.Reconcile.Interval 0) it does
// nothing and returns 0.
func (g *Gateway) ReconcileNow(ctx context.Context) int {
	if g.reconciler == nil {
		return 0
	}
	return g.reconciler.RunOnce(ctx)
}
