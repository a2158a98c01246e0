package edge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/h1"
)

// Errors.
var (
	// ErrClosed: Shutdown was called.
	ErrClosed = errors.New("edge: shut down")
	// ErrUnsupported wraps every configuration the edge cannot play; the
	// update carrying it is rejected (NACK) and the previous one kept.
	ErrUnsupported = errors.New("edge: unsupported configuration")
)

// Edge is the built-in data plane. Create it with New, feed it configuration
// with RunADS, stop it with Shutdown.
type Edge struct {
	proc           extprocfilter.Transport
	logger         *slog.Logger
	listenOverride string
	base           extprocfilter.Config
	// health answers healthPaths before routing (WithHealth).
	health      http.Handler
	healthPaths []string
	// services answer their path prefixes before routing (WithService).
	services []service

	state atomic.Pointer[state]
	// gate orders bursts (gate.go).
	gate gateConf

	mu      sync.Mutex
	lis     net.Listener
	srv     *h1.Server
	serving bool
	closed  bool
	ready   chan struct{}
	served  chan struct{} // closed when srv.Serve returned
}

// Option configures an Edge.
type Option func(*Edge)

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) Option { return func(e *Edge) { e.logger = l } }

// WithListenOverride binds the gateway listener to addr instead of the
// listener's socket address (e.g. "127.0.0.1:0").
func WithListenOverride(addr string) Option { return func(e *Edge) { e.listenOverride = addr } }

// WithListener serves on l, bound by the caller, instead of binding the
// listener's socket address: a bind error is then the caller's to report at
// start. The edge closes l on Shutdown.
func WithListener(l net.Listener) Option { return func(e *Edge) { e.lis = l } }

// WithEnvoyConfig sets the ext_proc client settings the xDS configuration
// does not carry: the version toggles of spec §8 and MaxOutstandingChunks.
// Every field the listener's ext_proc filter carries is taken from it.
// Default: extprocfilter.DefaultConfig().
func WithEnvoyConfig(c extprocfilter.Config) Option { return func(e *Edge) { e.base = c } }

// New returns an edge that calls the ext_proc processor over proc:
// in-process with extprocfilter.Sync, or over gRPC with
// extprocfilter.GRPC(extprocv3.NewExternalProcessorClient(conn)).
func New(proc extprocfilter.Transport, opts ...Option) *Edge {
	e := &Edge{
		proc:   proc,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		base:   extprocfilter.DefaultConfig(),
		ready:  make(chan struct{}),
		served: make(chan struct{}),
		gate:   defaultGate(),
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Ready is closed once the listener serves its first complete configuration
// (listener, routes and clusters).
func (e *Edge) Ready() <-chan struct{} { return e.ready }

// Addr is the listener's address, nil before Ready.
func (e *Edge) Addr() net.Addr {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.lis == nil {
		return nil
	}
	return e.lis.Addr()
}

// Shutdown stops accepting connections and waits for in-flight requests
// (streams included) to finish or ctx to end; then it closes what is left and
// returns ctx's error.
func (e *Edge) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	srv, lis, serving := e.srv, e.lis, e.serving
	e.mu.Unlock()
	var err error
	switch {
	case serving:
		err = srv.Shutdown(ctx)
		<-e.served
	case lis != nil:
		err = lis.Close()
	}
	if st := e.state.Load(); st != nil {
		for _, c := range st.clusters {
			c.close()
		}
	}
	return err
}

// bind opens the listener of lc unless it is open already.
func (e *Edge) bind(ctx context.Context, lc *listenerConf) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if e.lis != nil {
		return nil
	}
	addr := lc.addr
	if e.listenOverride != "" {
		addr = e.listenOverride
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("edge: listen %s: %w", addr, err)
	}
	e.lis = lis
	e.logger.Info("edge listener bound", "listener", lc.name, "addr", lis.Addr().String())
	return nil
}

// publish swaps in st and starts serving on the first complete state.
func (e *Edge) publish(st *state) {
	old := e.state.Swap(st)
	if old != nil {
		for name, c := range old.clusters {
			if st.clusters[name] != c {
				c.close()
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.serving || e.closed || e.lis == nil {
		return
	}
	lc := st.listener
	e.srv = h1.NewServer(e.serveHTTP, h1.Limits{
		MaxHeaderBytes: lc.maxHeadersKB << 10,
		MaxHeaders:     lc.maxHeaders,
		HeadersTimeout: lc.headersTimeout,
		IdleTimeout:    lc.idleTimeout,
	}, e.logger)
	e.srv.SetGate(e.gate.slots, e.gate.hold)
	e.serving = true
	srv, lis := e.srv, e.lis
	go func() {
		defer close(e.served)
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.logger.Error("edge listener stopped", "error", err)
		}
	}()
	close(e.ready)
}
