package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/alert"
	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/cache"
	"github.com/tollgate-ai/tollgate/edge"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
	"github.com/tollgate-ai/tollgate/reconcile"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/xds"
)

// StartHook runs once the gateway serves (every service listens, the data
// plane has its first configuration, the admin credential exists), before Run
// blocks. An error ends Run.
type StartHook func(ctx context.Context, g *Gateway) error

// Options are the optional parts of Run.
type Options struct {
	Log     *slog.Logger
	Stdout  io.Writer // where the bootstrap admin secret and start banner go
	Now     func() time.Time
	OnStart []StartHook
	// EnvoyOutput receives a child Envoy's logs (DataPlaneEnvoy).
	EnvoyOutput io.Writer
	// Counters, when set, are admission counters shared by replicas (Redis);
	// otherwise counters live in this process, seeded from the ledger.
	Counters accounting.Counters
	// Alerts, when set, checks budget thresholds every AlertEvery (alerts.go).
	Alerts     *alert.Notifier
	AlertEvery time.Duration
	// AlertAnomalyFactor: a key whose current hour of spend is above this
	// many times its trailing hourly average (and at least
	// AlertAnomalyFloor, default $1) alerts; 0: off unless the alert
	// settings set one (alerts.go).
	AlertAnomalyFactor int
	AlertAnomalyFloor  kernel.Money
	// Observe are the metrics, access log, traces and readiness settings.
	Observe Observability
	// Spill, when set, receives every settlement before the ledger queue does
	// (accounting.Spill): a crash while the ledger cannot commit loses none.
	Spill *accounting.Spill
	// Cache is where model groups' cached replies live (nil: in this
	// process); CacheIndex the semantic cache's prompt index (nil: in this
	// process). Replicas share Redis and pgvector (docs/caching.md).
	Cache      cache.Backend
	CacheIndex cache.Index
}

// Gateway is a running Tollgate: what start hooks and tests may reach.
type Gateway struct {
	Config     Config
	Store      store.Store
	Sealer     *secret.Sealer
	Catalog    *Catalog
	Accountant *accounting.Accountant
	Router     *extproc.Router // deployment health: cooldowns, latency, in flight
	counters   accounting.Counters
	alerts     *alert.Notifier
	alertEvery time.Duration
	// anomalyFactor and anomalyFloor: Options.AlertAnomalyFactor and Floor.
	anomalyFactor int
	anomalyFloor  kernel.Money
	obsOpts       Observability
	respCache     *responseCache // the processor's response cache (cache.go)
	obs           *observability
	// AdminSecret is the bootstrap admin secret when it was created by this start.
	AdminSecret string
	// Addresses actually bound (ports resolved).
	ListenAddr, AdminAddr, XDSAddr, ExtProcAddr string
	MCPAddr                                     string // the MCP service (Envoy's /mcp cluster)
	MetricsAddr                                 string // "" when metrics are off

	log         *slog.Logger
	stdout      io.Writer
	envoyOutput io.Writer
	onStart     []StartHook
	now         func() time.Time
	xds         *xds.Server
	builtMu     sync.Mutex
	reconciler  *reconcile.Job // the scheduled reconciliation; nil when off
	batches     *batch.Poller  // settles ended batches (batches.go)
	batchSvc    *batch.Service // the batch endpoints (batches.go)

	// What start steps started, for shutdown; nil when not started.
	proc     *extproc.Processor
	procSrv  *grpc.Server
	xdsSrv   *grpc.Server
	adminSrv *grpc.Server
	dataLis  net.Listener // the built-in data plane's listener, until edge owns it
	edge     *edge.Edge
	mcp      *mcp.Handler // the MCP gateway (mcp.go)
	mcpCat   *mcpCatalog
	mcpObs   mcp.Observer // shared by the MCP service and the processor's edge check (mcp.go)
	mcpSrv   *http.Server // the MCP service Envoy's /mcp route reaches
	child    *childEnvoy
	conns    []*grpc.ClientConn
	wg       sync.WaitGroup // every goroutine the steps started
	errc     chan error     // a service that stopped with an error
}

// Run starts the admin API, the xDS server, the ext_proc processor and the data
// plane on st, and blocks until ctx ends, then shuts everything down gracefully
// (in-flight streams drained, every settlement flushed to the store).
//
// Start-up is a sequence of named steps (start.go); the first that fails ends
// Run with its error after stopping what the earlier steps started. A service
// that fails while running ends Run the same way.
func Run(ctx context.Context, cfg Config, st store.Store, opts Options) error {
	g, err := newGateway(cfg, st, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = g.start(ctx)
	if err == nil {
		g.log.Info("tollgate is running", "listen", g.ListenAddr, "admin", g.AdminAddr, "xds", g.XDSAddr,
			"extproc", g.ExtProcAddr, "dataplane", g.Config.DataPlane)
		err = g.wait(ctx)
	}
	return errors.Join(err, g.shutdown(ctx, cancel))
}

// newGateway checks cfg and builds what the services share: the sealer, the
// catalog and the accountant.
func newGateway(cfg Config, st store.Store, opts Options) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	stdout := opts.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sealer, err := secret.NewSealer(cfg.MasterKey)
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		Config: cfg, Store: st, Sealer: sealer, Catalog: NewCatalog(now),
		log: log, stdout: stdout, envoyOutput: opts.EnvoyOutput, onStart: opts.OnStart, now: now,
		errc: make(chan error, 8),
	}
	acctOpts := []accounting.Option{accounting.WithLease(cfg.ReservationLease)}
	if opts.Spill != nil {
		acctOpts = append(acctOpts, accounting.WithSpill(opts.Spill))
	}
	g.counters, g.obsOpts = opts.Counters, opts.Observe
	g.alerts, g.alertEvery = opts.Alerts, opts.AlertEvery
	g.anomalyFactor, g.anomalyFloor = opts.AlertAnomalyFactor, opts.AlertAnomalyFloor
	g.respCache = newGatewayCache(opts.Cache, opts.CacheIndex, g.Catalog, now, log)
	if opts.Counters != nil {
		g.Accountant = accounting.NewAccountant(opts.Counters, st, now, log, acctOpts...)
	} else {
		g.Accountant = accounting.NewLocalAccountant(st, st, now, log, acctOpts...)
	}
	return g, nil
}

// Refresh rebuilds the configuration snapshot from the store now, instead of
// when the store's watch fires: a caller that just wrote configuration (the
// demo setup) can rely on it being served when Refresh returns.
func (g *Gateway) Refresh(ctx context.Context) error { return g.refresh(ctx) }

// refresh builds a snapshot from the store, seeds counters, and publishes it.
// applyWait bounds how long a configuration change waits for the connected
// data planes to apply it before the processor uses it.
const applyWait = 5 * time.Second

func (g *Gateway) refresh(ctx context.Context) error {
	g.builtMu.Lock()
	defer g.builtMu.Unlock()
	s, err := buildSnapshot(ctx, g.Store, g.Sealer, g.log, g.now())
	if err != nil {
		return err
	}
	if err := g.Accountant.Seed(ctx, s.Budgeted); err != nil {
		return err
	}
	// Routes first, and applied by every connected data plane (bounded), so
	// that the processor never picks a deployment the data plane has no
	// route or cluster for yet: it would answer that request itself.
	if err := g.xds.Update(ctx, g.xdsInput(s)); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, applyWait)
	if err := g.xds.WaitApplied(wctx); err != nil && ctx.Err() == nil {
		g.log.Warn("a data plane has not applied the configuration yet; the processor uses it anyway",
			"version", g.xds.Version(), "waited", applyWait)
	}
	cancel()
	g.Catalog.Swap(s)
	if err := g.refreshMCP(ctx); err != nil {
		g.log.Error("MCP configuration refresh failed; serving the previous one", "err", err)
	}
	g.snapshotPublished(s)
	return nil
}

// watch refreshes the snapshot on every change the store reports. A change
// made after the first snapshot was built and before changes was subscribed
// has no notification of its own: the revision check catches it (it was
// missed for good, and a key created then stayed unknown).
func (g *Gateway) watch(ctx context.Context, changes <-chan int64) {
	refresh := func() {
		if err := g.refresh(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("configuration refresh failed; serving the previous snapshot", "err", err)
		}
	}
	if rev, err := g.Store.Revision(ctx); err == nil && rev != g.Catalog.Snapshot().Revision {
		refresh()
	}
	for range changes {
		refresh()
	}
}

func (g *Gateway) xdsInput(s *Snapshot) *xds.Input {
	in := &xds.Input{
		Listener:            hostPort(g.Config.Listen),
		MaxRequestBodyBytes: g.Config.MaxBodyBytes,
	}
	// Run binds the processor before the first refresh, so its address is known.
	if path, ok := strings.CutPrefix(g.ExtProcAddr, "unix:"); ok {
		in.ExtProc = xds.Address{Path: path}
	} else {
		in.ExtProc = hostPort(g.ExtProcAddr)
	}
	for _, u := range s.Upstreams {
		in.Upstreams = append(in.Upstreams, xds.Upstream{
			Deployment: u.Deployment, Scheme: u.Scheme, Host: u.Host, Port: u.Port, ConnectTimeout: u.ConnectTimeout,
			Timeout: u.Timeout, FirstByteTimeout: u.FirstByteTimeout,
			AllowedFails: u.AllowedFails, Cooldown: u.Cooldown,
			// https providers negotiate HTTP/2 by ALPN when they offer it.
			HTTP2: u.Scheme == "https",
		})
	}
	in.Groups = s.xdsGroups() // per-try routes (routing.go)
	if g.MCPAddr != "" {
		a := hostPort(g.MCPAddr)
		in.MCP = &a
	}
	return in
}

func hostPort(addr string) xds.Address {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return xds.Address{Host: addr}
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return xds.Address{Host: addr}
	}
	return xds.Address{Host: h, Port: uint32(port)}
}
