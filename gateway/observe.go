package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/edge"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/observe"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

// Observability are the optional observability parts of Run (cmd/ fills
// them from flags and OTEL_*). Metrics are served on Config.MetricsAddr.
type Observability struct {
	// PerKeyLabels adds the per-key metric series (one per virtual key).
	PerKeyLabels bool
	// AccessLog gets one line per request (nil: none).
	AccessLog *slog.Logger
	// Tracing exports one trace per request (nil: none); Run shuts it down.
	Tracing *observe.Tracing
	// Checks are readiness checks beyond the store's, the ledger writer's and
	// the first snapshot's (Redis, when the counters live there).
	Checks []observe.Check
	// MetricsAddrDefaulted says Config.MetricsAddr is the default, not asked
	// for: when it is taken (another tollgate on the machine), Run warns and
	// goes on without metrics instead of failing.
	MetricsAddrDefaulted bool
}

// ErrNoSnapshot is the readiness failure before the first configuration
// snapshot is published over xDS.
var ErrNoSnapshot = errors.New("gateway: no configuration snapshot published yet")

// ledgerStalledAfter is how long the ledger writer may hold entries without
// writing any before /readyz fails.
const ledgerStalledAfter = 30 * time.Second

// observability is a running gateway's metrics, health and reporting.
type observability struct {
	metrics   *observe.Metrics // nil when Config.MetricsAddr is empty
	health    *observe.Health
	observer  extproc.Observer
	tracing   *observe.Tracing
	published atomic.Bool
	proc      atomic.Pointer[extproc.Processor]
	srv       *http.Server
	wg        sync.WaitGroup
	cancel    context.CancelFunc
}

// ledgerStats returns the counters of st's ledger writer: SQLite's
// LedgerStats, PostgreSQL's Stats (its writers summed); nil for a store
// without one.
func ledgerStats(st any) func() groupcommit.Stats {
	switch s := st.(type) {
	case interface{ LedgerStats() groupcommit.Stats }:
		return s.LedgerStats
	case interface{ Stats() groupcommit.Stats }:
		return s.Stats
	default:
		return nil
	}
}

// startObserve sets up metrics, health and reporting, and serves
// Config.MetricsAddr (/metrics, /healthz, /readyz). stopObserve ends them.
func (g *Gateway) startObserve(ctx context.Context, o Observability) error {
	obs := &observability{health: observe.NewHealth(g.log, 2*time.Second), tracing: o.Tracing}
	g.obs = obs
	obs.health.Add(observe.Check{Name: "store", Check: func(ctx context.Context) error {
		_, err := g.Store.Revision(ctx)
		return err
	}}, observe.Check{Name: "xds", Check: func(context.Context) error {
		if !obs.published.Load() {
			return ErrNoSnapshot
		}
		return nil
	}})
	var ledger func() observe.LedgerStats
	if stats := ledgerStats(g.Store); stats != nil {
		ledger = func() observe.LedgerStats {
			s := stats()
			return observe.LedgerStats{
				Batches: s.Batches, Entries: s.Entries, FlushErrors: s.FlushErrors,
				Pending: s.QueueDepth, FlushTime: s.FlushTime,
			}
		}
		obs.health.Add(observe.LedgerCheck(ledger, ledgerStalledAfter, time.Now))
	}
	obs.health.Add(o.Checks...)

	var accessLog extproc.Observer
	if o.AccessLog != nil {
		accessLog = observe.NewAccessLog(ctx, o.AccessLog)
	}
	var tracing extproc.Observer
	if o.Tracing != nil {
		tracing = o.Tracing
	}
	var metrics extproc.Observer
	var lis net.Listener
	if g.Config.MetricsAddr != "" {
		var err error
		lis, err = net.Listen("tcp", g.Config.MetricsAddr)
		switch {
		case err != nil && o.MetricsAddrDefaulted:
			g.log.Warn("the default metrics address is taken: no /metrics (set --metrics-addr)", "addr", g.Config.MetricsAddr, "err", err)
		case err != nil:
			return fmt.Errorf("metrics listen %s: %w", g.Config.MetricsAddr, err)
		}
	}
	if lis != nil {
		obs.metrics = observe.NewMetrics(observe.WithPerKeyLabels(o.PerKeyLabels))
		if ledger != nil {
			obs.metrics.WatchLedger(ledger)
		}
		metrics = obs.metrics
		g.MetricsAddr = lis.Addr().String()
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", obs.metrics.Handler())
		mux.Handle(observe.PathLive, obs.health)
		mux.Handle(observe.PathReady, obs.health)
		obs.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		obs.wg.Go(func() {
			if err := obs.srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
				g.log.Error("metrics server stopped", "err", err)
			}
		})
	}
	// Metrics last: what a scrape counts is already logged and traced.
	obs.observer = observe.Join(accessLog, tracing, metrics)

	// The gRPC health service follows readiness.
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	obs.cancel = cancel
	obs.wg.Go(func() {
		obs.health.Watch(wctx, 2*time.Second, func(ready bool) {
			if p := obs.proc.Load(); p != nil {
				p.SetServing(ready)
			}
		})
	})
	return nil
}

// stopObserve stops the metrics server and flushes traces.
func (g *Gateway) stopObserve(ctx context.Context) error {
	obs := g.obs
	if obs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var errs []error
	if obs.cancel != nil { // nil when startObserve failed before its watch
		obs.cancel()
	}
	if obs.srv != nil {
		errs = append(errs, obs.srv.Shutdown(ctx))
	}
	obs.wg.Wait()
	if obs.tracing != nil {
		errs = append(errs, obs.tracing.Shutdown(ctx))
	}
	return errors.Join(errs...)
}

// observeProcessor returns the processor's observer option, and the
// accountant it reports through (counted when metrics are on).
func (g *Gateway) observeProcessor() (extproc.Accountant, extproc.Option) {
	var acct extproc.Accountant = processorAccountant{Accountant: g.Accountant, retention: g.Config.ResponsesRetention}
	if g.obs.metrics != nil {
		acct = g.obs.metrics.Accountant(acct)
	}
	return acct, extproc.WithObserver(g.obs.observer)
}

// observed is told the processor Run started: its gRPC health follows
// readiness from the next check on, and the metrics count its router's
// cooldowns and export its deployments' state.
func (g *Gateway) observed(p *extproc.Processor) {
	g.obs.proc.Store(p)
	if m := g.obs.metrics; m != nil && g.Router != nil {
		g.Router.SetCooldownObserver(m)
		m.WatchRouter(g.Router, g.now)
	}
}

// snapshotPublished records a snapshot published over xDS.
func (g *Gateway) snapshotPublished(s *Snapshot) {
	if g.obs == nil {
		return
	}
	g.obs.published.Store(true)
	if g.obs.metrics != nil {
		g.obs.metrics.XDSPublished(s.Revision)
	}
}

// edgeHealth is the built-in data plane's option answering /healthz and
// /readyz on the data-plane port.
func (g *Gateway) edgeHealth() edge.Option {
	return edge.WithHealth(g.obs.health, observe.PathLive, observe.PathReady)
}

// Metrics is the gateway's metrics (nil when Config.MetricsAddr is empty).
func (g *Gateway) Metrics() *observe.Metrics { return g.obs.metrics }

// Health is the gateway's readiness checks.
func (g *Gateway) Health() *observe.Health { return g.obs.health }
