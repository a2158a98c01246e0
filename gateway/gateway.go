package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/edge"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/extproc/envoytest"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/xds"
)

// StartHook runs once every service listens, before Run blocks.
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
	Counters Counters
}

// Gateway is a running Tollgate: what start hooks and tests may reach.
type Gateway struct {
	Config     Config
	Store      store.Store
	Sealer     *secret.Sealer
	Catalog    *Catalog
	Accountant *Accountant
	Router     *extproc.Router // deployment health: cooldowns, latency, in flight
	// AdminSecret is the bootstrap admin secret when it was created by this start.
	AdminSecret string
	// Addresses actually bound (ports resolved).
	ListenAddr, AdminAddr, XDSAddr, ExtProcAddr string

	log     *slog.Logger
	now     func() time.Time
	xds     *xds.Server
	builtMu sync.Mutex
}

// Run starts the admin API, the xDS server, the ext_proc processor and the data
// plane on st, and blocks until ctx ends, then shuts everything down gracefully
// (in-flight streams drained, every settlement flushed to the store).
func Run(ctx context.Context, cfg Config, st store.Store, opts Options) error {
	if err := cfg.Validate(); err != nil {
		return err
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
		return err
	}
	g := &Gateway{
		Config: cfg, Store: st, Sealer: sealer, log: log, now: now,
		Catalog: NewCatalog(now),
	}
	if opts.Counters != nil {
		g.Accountant = NewAccountant(opts.Counters, st, now, log)
	} else {
		g.Accountant = NewLocalAccountant(st, st, now, log)
	}

	for _, f := range cfg.ApplyFiles {
		doc, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("apply %s: %w", f, err)
		}
		res, err := admin.Apply(ctx, st, sealer, doc, "apply:"+f)
		if err != nil {
			return fmt.Errorf("apply %s: %w", f, err)
		}
		log.Info("applied configuration", "file", f, "result", fmt.Sprintf("%+v", res))
	}

	secretOnce, created, err := admin.Bootstrap(ctx, st, cfg.AdminKey)
	if err != nil {
		return fmt.Errorf("bootstrap admin credential: %w", err)
	}
	if created && cfg.AdminKey == "" {
		g.AdminSecret = secretOnce
		fmt.Fprintf(stdout, "Bootstrap admin key (shown once, keep it): %s\n", secretOnce)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	goServe := func(name string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil && !errors.Is(err, grpc.ErrServerStopped) && !errors.Is(err, context.Canceled) {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}

	// The listener address is programmed over xDS, so a port 0 (tests) is
	// resolved to a free port first.
	if cfg.Listen, err = resolvePort(cfg.Listen); err != nil {
		return err
	}
	g.Config.Listen = cfg.Listen
	g.xds = xds.NewServer(log) //nolint:contextcheck // its streams live until Stop

	// Processor.
	router := extproc.NewRouter()
	g.Router = router
	proc := extproc.New(g.Catalog, g.Accountant, //nolint:contextcheck // streams carry their own contexts
		extproc.WithLogger(log), extproc.WithClock(now), extproc.WithMaxBodyBytes(int(cfg.MaxBodyBytes)), extproc.WithRouter(router))
	procLis, err := listen(cfg.ExtProcAddr)
	if err != nil {
		return err
	}
	g.ExtProcAddr = addrString(procLis)
	procSrv := extproc.NewGRPCServer(proc)
	goServe("ext_proc", func() error { return procSrv.Serve(procLis) })

	// xDS.
	xdsLis, err := net.Listen("tcp", cfg.XDSAddr)
	if err != nil {
		return fmt.Errorf("xds listen %s: %w", cfg.XDSAddr, err)
	}
	g.XDSAddr = xdsLis.Addr().String()
	xdsSrv := grpc.NewServer()
	g.xds.Register(xdsSrv)
	goServe("xds", func() error { return xdsSrv.Serve(xdsLis) })
	// First configuration snapshot, before anything is admitted.
	if err := g.refresh(ctx); err != nil {
		return err
	}

	// Admin API.
	adm := admin.New(st, sealer, admin.WithLogger(log), admin.WithClock(now), admin.WithRoutingStates(routingStates{router, now}))
	adminLis, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("admin listen %s: %w", cfg.AdminAddr, err)
	}
	g.AdminAddr = adminLis.Addr().String()
	adminSrv := grpc.NewServer(admin.ServerOptions(adm)...)
	adm.Register(adminSrv)
	goServe("admin", func() error { return adminSrv.Serve(adminLis) })

	// Configuration changes → snapshot, counters, xDS.
	wg.Add(2)
	shareCooldowns(ctx, &wg, router, opts.Counters, now)
	go func() { defer wg.Done(); g.watch(ctx) }()
	go func() { defer wg.Done(); g.Accountant.ExpireLoop(ctx, 5*time.Second) }()

	// Data plane.
	var dp *edge.Edge
	if cfg.DataPlane == DataPlaneBuiltin {
		var pc extprocv3.ExternalProcessorClient
		if cfg.ProcessorOverGRPC {
			conn, err := grpc.NewClient(grpcTarget(g.ExtProcAddr), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return err
			}
			defer conn.Close()
			pc = extprocv3.NewExternalProcessorClient(conn)
		} else {
			// In-process: each message is a call in the request's goroutine.
			pc = envoytest.Sync(func(ctx context.Context) envoytest.SyncStream { return proc.Session(ctx) })
		}
		xconn, err := grpc.NewClient(g.XDSAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer xconn.Close()
		dp = edge.New(pc, edge.WithLogger(log), edge.WithListenOverride(cfg.Listen))
		goServe("data plane", func() error { return dp.RunADS(ctx, xconn, cfg.NodeID) })
		select {
		case <-dp.Ready():
			g.ListenAddr = dp.Addr().String()
		case err := <-errc:
			cancel()
			wg.Wait()
			return err
		case <-ctx.Done():
		}
	}

	var child *childEnvoy
	if cfg.DataPlane == DataPlaneEnvoy {
		child, err = startEnvoy(cfg, g.XDSAddr, opts.EnvoyOutput)
		if err != nil {
			cancel()
			wg.Wait()
			return err
		}
		g.ListenAddr = cfg.Listen
		goServe("envoy", func() error {
			select {
			case <-child.Exited():
				if ctx.Err() == nil {
					err := child.Err()
					if err == nil {
						err = errors.New("status 0")
					}
					return fmt.Errorf("exited unexpectedly: %w", err)
				}
			case <-ctx.Done():
			}
			return nil
		})
	}

	for _, h := range opts.OnStart {
		if err := h(ctx, g); err != nil {
			cancel()
			wg.Wait()
			return err
		}
	}
	log.Info("tollgate is running", "listen", g.ListenAddr, "admin", g.AdminAddr, "xds", g.XDSAddr, "extproc", g.ExtProcAddr, "dataplane", cfg.DataPlane)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}

	// Graceful shutdown: stop taking requests, drain streams, then flush.
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer scancel()
	var errs []error
	if dp != nil {
		errs = append(errs, dp.Shutdown(sctx))
	}
	if child != nil {
		errs = append(errs, child.Stop(sctx))
	}
	procSrv.GracefulStop()
	adminSrv.GracefulStop()
	xdsSrv.Stop()
	g.xds.Stop()
	cancel()
	wg.Wait()
	errs = append(errs, st.Flush(sctx))
	return errors.Join(append([]error{runErr}, errs...)...)
}

// Refresh rebuilds the configuration snapshot from the store now, instead of
// when the store's watch fires: a caller that just wrote configuration (the
// demo setup) can rely on it being served when Refresh returns.
func (g *Gateway) Refresh(ctx context.Context) error { return g.refresh(ctx) }

// refresh builds a snapshot from the store, seeds counters, and publishes it.
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
	// Routes first, so that the processor never picks a deployment the data
	// plane has not been told about yet.
	if err := g.xds.Update(ctx, g.xdsInput(s)); err != nil {
		return err
	}
	g.Catalog.Swap(s)
	return nil
}

func (g *Gateway) watch(ctx context.Context) {
	for range g.Store.Watch(ctx) {
		if err := g.refresh(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("configuration refresh failed; serving the previous snapshot", "err", err)
		}
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
			// https providers negotiate HTTP/2 by ALPN when they offer it.
			HTTP2: u.Scheme == "https",
		})
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

func resolvePort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return addr, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", fmt.Errorf("listen %s: %w", addr, err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func listen(addr string) (net.Listener, error) {
	network, address := "tcp", addr
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		_ = os.Remove(path)
		network, address = "unix", path
	}
	l, err := net.Listen(network, address)
	if err != nil {
		return nil, fmt.Errorf("ext_proc listen %s: %w", addr, err)
	}
	return l, nil
}

func addrString(l net.Listener) string {
	if l.Addr().Network() == "unix" {
		return "unix:" + l.Addr().String()
	}
	return l.Addr().String()
}

func grpcTarget(addr string) string {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return "unix://" + path
	}
	return addr
}
