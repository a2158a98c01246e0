package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/edge"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/xds"
)

// dataPlaneReadyTimeout bounds the wait for the built-in data plane's first
// configuration (over in-process xDS it takes milliseconds).
const dataPlaneReadyTimeout = 30 * time.Second

// shutdownTimeout bounds draining in-flight requests and flushing settlements.
const shutdownTimeout = 30 * time.Second

// startStep is one step of start-up; its name prefixes its error.
type startStep struct {
	name string
	run  func(ctx context.Context) error
}

// start runs the start steps in order and stops at the first error; shutdown
// then stops what the earlier steps started.
func (g *Gateway) start(ctx context.Context) error {
	steps := []startStep{
		{"transport security", g.warnPlaintext},
		{"apply configuration", g.applyFiles},
		{"data plane listener", g.bindDataPlane},
		{"observability", func(ctx context.Context) error { return g.startObserve(ctx, g.obsOpts) }},
		{"shared counters", g.joinCounters},
		{"ext_proc processor", g.startProcessor},
		{"batch endpoints", g.startBatchService},
		{"MCP gateway", g.startMCP},
		{"xDS server", g.startXDS},
		{"background holds", g.restoreHolds},
		{"admin API", g.startAdmin},
		{"store watch", g.startWatchers},
		{"budget alerts", g.startAlerts},
		{"data plane", g.startDataPlane},
		{"admin credential", g.bootstrapAdmin},
		{"start hook", g.runStartHooks},
	}
	for _, s := range steps {
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		g.log.Debug("start step done", "step", s.name)
	}
	return nil
}

// wait blocks until ctx ends (nil) or a service stops with an error.
func (g *Gateway) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-g.errc:
		return err
	}
}

// shutdown stops whatever start started, in order: stop taking requests and
// drain them, stop the servers, end the goroutines (cancel), then flush every
// settlement to the store.
func (g *Gateway) shutdown(ctx context.Context, cancel context.CancelFunc) error {
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer scancel()
	var errs []error
	if g.edge != nil {
		errs = append(errs, g.edge.Shutdown(sctx))
	}
	if g.dataLis != nil {
		_ = g.dataLis.Close()
	}
	if g.child != nil {
		errs = append(errs, g.child.Stop(sctx))
	}
	if g.mcpSrv != nil {
		errs = append(errs, g.mcpSrv.Shutdown(sctx))
	}
	if g.mcp != nil {
		g.mcp.Close() // the upstream MCP sessions
	}
	for _, srv := range []*grpc.Server{g.procSrv, g.adminSrv} {
		if srv != nil {
			srv.GracefulStop()
		}
	}
	if g.xdsSrv != nil {
		g.xdsSrv.Stop()
	}
	if g.xds != nil {
		g.xds.Stop()
	}
	cancel()
	g.wg.Wait()
	for _, c := range g.conns {
		_ = c.Close()
	}
	errs = append(errs, g.Store.Flush(sctx), g.stopObserve(sctx))
	return errors.Join(errs...)
}

// serve runs f in a goroutine of the gateway; its error (other than a stop)
// ends Run.
func (g *Gateway) serve(name string, f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		// net.ErrClosed: at shutdown the admin port's split listener may
		// close before its gRPC server stops; only shutdown closes listeners.
		if err := f(); err != nil && !errors.Is(err, grpc.ErrServerStopped) && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
			g.errc <- fmt.Errorf("%s: %w", name, err)
		}
	}()
}

// applyFiles applies the declarative configuration files of Config.ApplyFiles.
func (g *Gateway) applyFiles(ctx context.Context) error {
	for _, f := range g.Config.ApplyFiles {
		doc, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		res, err := admin.Apply(ctx, g.Store, g.Sealer, doc, "apply:"+f)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		g.log.Info("applied configuration", "file", f, "result", fmt.Sprintf("%+v", res))
	}
	return nil
}

// bindDataPlane binds the built-in data plane's listener now, so that a port
// in use ends start-up instead of being retried on every xDS update. For Envoy
// the address is checked free (Envoy binds it itself from xDS); a port 0
// (tests) is resolved to a free port, since the address is programmed over xDS.
func (g *Gateway) bindDataPlane(ctx context.Context) error {
	switch g.Config.DataPlane {
	case DataPlaneBuiltin:
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", g.Config.Listen)
		if err != nil {
			return err
		}
		g.dataLis = l
		g.Config.Listen = l.Addr().String()
	case DataPlaneEnvoy:
		l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", g.Config.Listen)
		if err != nil {
			return err
		}
		g.Config.Listen = l.Addr().String()
		return l.Close()
	default:
		addr, err := resolvePort(ctx, g.Config.Listen)
		if err != nil {
			return err
		}
		g.Config.Listen = addr
	}
	return nil
}

// startProcessor serves the ext_proc processor over gRPC (for Envoy, and for
// the built-in data plane with ProcessorOverGRPC).
func (g *Gateway) startProcessor(ctx context.Context) error {
	respOpts, purgeResponses := processorResponseOptions(g.Store, &g.Config, g.now, g.log)
	g.Router = extproc.NewRouter()
	respOpts = append(respOpts, extproc.WithRouter(g.Router))
	respOpts = append(respOpts, extproc.WithGuardrails(g.Catalog)) // gateway/guard.go
	respOpts = append(respOpts, extproc.WithCheckpoints(g.Accountant))
	respOpts = append(respOpts, extproc.WithResponseCache(g.respCache))
	tokenKey, err := sharedTokenKey(ctx, g.Store)
	if err != nil {
		return err
	}
	respOpts = append(respOpts, extproc.WithTokenKey(tokenKey))
	respOpts = append(respOpts, g.mcpEdgeOption(ctx)) // mcp.go: /mcp on Envoy
	acct, observer := g.observeProcessor()
	g.respCache.embedThrough(acct, g.now)
	g.proc = extproc.New(g.Catalog, acct, append([]extproc.Option{ //nolint:contextcheck // streams carry their own contexts
		extproc.WithLogger(g.log), extproc.WithClock(g.now), extproc.WithMaxBodyBytes(int(g.Config.MaxBodyBytes)), observer,
		extproc.WithPerTry(), // the xDS has per-try routes (xdsGroups)
	}, respOpts...)...)
	g.observed(g.proc)
	if purgeResponses != nil {
		g.serve("responses purge", func() error { return purgeResponses(ctx) })
	}
	tlsOpts, err := serverTLS(g.Config.ExtProcTLS)
	if err != nil {
		return err
	}
	l, err := listen(g.Config.ExtProcAddr)
	if err != nil {
		return err
	}
	g.ExtProcAddr = addrString(l)
	g.procSrv = extproc.NewGRPCServer(g.proc, tlsOpts...)
	g.serve("ext_proc", func() error { return g.procSrv.Serve(l) })
	return nil
}

// startXDS serves ADS and publishes the first configuration snapshot, before
// anything is admitted.
func (g *Gateway) startXDS(ctx context.Context) error {
	tlsOpts, err := serverTLS(g.Config.XDSTLS)
	if err != nil {
		return err
	}
	g.xds = xds.NewServer(g.log) //nolint:contextcheck // its streams live until Stop
	l, err := net.Listen("tcp", g.Config.XDSAddr)
	if err != nil {
		return err
	}
	g.XDSAddr = l.Addr().String()
	g.xdsSrv = grpc.NewServer(tlsOpts...)
	g.xds.Register(g.xdsSrv)
	g.serve("xds", func() error { return g.xdsSrv.Serve(l) })
	return g.refresh(ctx)
}

// startAdmin serves the admin port: the gRPC admin API, and over HTTP/1.1 the
// REST API, its OpenAPI document and the web console (admin.SplitPort).
func (g *Gateway) startAdmin(ctx context.Context) error {
	adm := admin.New(g.Store, g.Sealer, admin.WithLogger(g.log), admin.WithClock(g.now), admin.WithRoutingStates(routingStates{g.Router, g.now}))
	l, err := net.Listen("tcp", g.Config.AdminAddr)
	if err != nil {
		return err
	}
	g.AdminAddr = l.Addr().String()
	g.adminSrv = grpc.NewServer(admin.ServerOptions(adm)...)
	adm.Register(g.adminSrv)
	l, restDial, err := g.adminTLS(l)
	if err != nil {
		_ = l.Close()
		return err
	}
	port := admin.SplitPort(l)
	g.serve("admin", func() error { return g.adminSrv.Serve(port.GRPC) })
	g.serve("admin http", func() error { return adm.ServeHTTP(ctx, port.HTTP, g.AdminAddr, restDial...) })
	return nil
}

// startWatchers follows configuration changes (snapshot, counters, xDS) and
// expires abandoned reservations.
func (g *Gateway) startWatchers(ctx context.Context) error {
	changes := g.Store.Watch(ctx) // before watch's revision check: no change falls between
	g.wg.Add(2)
	shareCooldowns(ctx, &g.wg, g.Router, g.counters, g.now)
	go func() { defer g.wg.Done(); g.watch(ctx, changes) }()
	go func() { defer g.wg.Done(); g.Accountant.ExpireLoop(ctx, 5*time.Second) }()
	g.startReconcile(ctx)
	g.startBatches(ctx)
	return nil
}

// restoreHolds reserves again the holds of the background responses whose
// settlement is pending (issue 37), when the counters are this process's
// own: they started empty, and a settlement that finds no reservation
// charges nothing, so a response admitted by a process that stopped would
// never be charged. Each hold is reserved as its admission made it, under
// its request id, never refused (it was admitted already; the provider
// runs it), until the end of its lease — and at least holdGrace when that
// lease ended while no gateway ran, so the poller settles it from what the
// provider ran before its expiry charges the worst case. Shared counters
// (Redis) kept the reservations: nothing to do. After the xDS step, whose
// first snapshot seeds the budget windows the holds count on; before any
// request.
func (g *Gateway) restoreHolds(ctx context.Context) error {
	ro, ok := g.Store.(store.ResponseOwners)
	if !ok || g.Accountant.State() == nil {
		return nil
	}
	pending, err := ro.PendingResponseOwners(ctx)
	if err != nil {
		g.log.Warn("background holds not restored: their settlements find no reservation", "err", err)
		return nil
	}
	now, n := g.now(), 0
	for i := range pending {
		o := &pending[i]
		d, err := decodePending(o.Pending)
		if err != nil || d.Hold == nil {
			g.log.Warn("background hold unknown: its settlement finds no reservation", "response", o.ID, "err", err)
			continue
		}
		dec, err := g.Accountant.Admit(ctx, d.Hold.AdmitRequest(d.Entry.RequestID, now, holdGrace(g.Config.BatchPollInterval)))
		switch {
		case err != nil:
			g.log.Warn("background hold not restored", "response", o.ID, "request_id", d.Entry.RequestID, "err", err)
		case dec.Admitted:
			n++
		case dec.Reason != kernel.ReasonDuplicate: // a duplicate is held already
			g.log.Warn("background hold not restored", "response", o.ID, "request_id", d.Entry.RequestID, "reason", dec.Reason)
		}
	}
	if n > 0 {
		g.log.Info("background holds reserved again", "count", n)
	}
	return nil
}

// holdGrace is the lease of a restored hold whose own lease ended while no
// gateway ran: two polls of the poller that settles it.
func holdGrace(poll time.Duration) time.Duration { return 2 * max(poll, time.Minute) }

// startDataPlane starts the configured data plane: the built-in one (until it
// serves its first configuration) or a child Envoy.
func (g *Gateway) startDataPlane(ctx context.Context) error {
	switch g.Config.DataPlane {
	case DataPlaneBuiltin:
		return g.startEdge(ctx)
	case DataPlaneEnvoy:
		return g.startChildEnvoy(ctx)
	default:
		return nil
	}
}

func (g *Gateway) startEdge(ctx context.Context) error {
	var pc extprocfilter.Transport
	if g.Config.ProcessorOverGRPC {
		creds, err := g.dataPlaneCreds(g.Config.ExtProcTLS)
		if err != nil {
			return err
		}
		conn, err := grpc.NewClient(grpcTarget(g.ExtProcAddr), creds)
		if err != nil {
			return err
		}
		g.conns = append(g.conns, conn)
		pc = extprocfilter.GRPC(extprocv3.NewExternalProcessorClient(conn))
	} else {
		// In-process: each message is a call in the request's goroutine.
		pc = extprocfilter.Sync(func(ctx context.Context) extprocfilter.SyncStream { return g.proc.LendingSession(ctx) })
	}
	xcreds, err := g.dataPlaneCreds(g.Config.XDSTLS)
	if err != nil {
		return err
	}
	xconn, err := grpc.NewClient(g.XDSAddr, xcreds)
	if err != nil {
		return err
	}
	g.conns = append(g.conns, xconn)
	g.edge = edge.New(pc, edge.WithLogger(g.log), edge.WithListener(g.dataLis), g.edgeHealth(), g.mcpEdge(), g.batchEdge())
	g.dataLis = nil // the edge owns it now
	g.serve("data plane", func() error { return g.edge.RunADS(ctx, xconn, g.Config.NodeID) })
	t := time.NewTimer(dataPlaneReadyTimeout)
	defer t.Stop()
	select {
	case <-g.edge.Ready():
		g.ListenAddr = g.edge.Addr().String()
		return nil
	case err := <-g.errc:
		return err
	case <-t.C:
		return fmt.Errorf("no configuration from xDS after %v (see the log)", dataPlaneReadyTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *Gateway) startChildEnvoy(ctx context.Context) error {
	child, err := startEnvoy(g.Config, g.XDSAddr, g.ExtProcAddr, g.envoyOutput)
	if err != nil {
		return err
	}
	g.child = child
	g.ListenAddr = g.Config.Listen
	g.serve("envoy", func() error {
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
	return nil
}

// bootstrapAdmin creates the first admin credential when there is none, and
// prints its secret once: only now that the gateway serves, so that a failed
// start neither shows a secret nor loses one.
func (g *Gateway) bootstrapAdmin(ctx context.Context) error {
	secretOnce, created, err := admin.Bootstrap(ctx, g.Store, g.Config.AdminKey)
	if err != nil {
		return err
	}
	if created && g.Config.AdminKey == "" {
		g.AdminSecret = secretOnce
		_, err = fmt.Fprintf(g.stdout, "Bootstrap admin key (shown once, keep it): %s\n", secretOnce)
	}
	return err
}

func (g *Gateway) runStartHooks(ctx context.Context) error {
	for _, h := range g.onStart {
		if err := h(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// resolvePort turns a port 0 into a free port.
func resolvePort(ctx context.Context, addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return addr, err
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// listen binds host:port or unix:/path (a stale socket file is removed first).
func listen(addr string) (net.Listener, error) {
	network, address := "tcp", addr
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		_ = os.Remove(path)
		network, address = "unix", path
	}
	return net.Listen(network, address)
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
