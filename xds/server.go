package xds

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
)

// SnapshotKey is the snapshot cache key every node maps to: all Envoys (and
// built-in data planes) get the same resources, whatever their node id.
const SnapshotKey = "tollgate"

// sameForAll is a node hash that ignores the node.
type sameForAll struct{}

func (sameForAll) ID(*corev3.Node) string { return SnapshotKey }

// Server is the xDS management server: a go-control-plane snapshot cache
// served over ADS and the separate LDS/RDS/CDS/EDS services.
type Server struct {
	logger    *slog.Logger
	cache     cache.SnapshotCache
	xds       serverv3.Server
	callbacks serverv3.Callbacks
	acks      *acks
	cancel    context.CancelFunc

	mu      sync.Mutex
	version string
}

// Option configures a Server.
type Option func(*Server)

// WithCallbacks observes streams and requests (go-control-plane callbacks),
// for example to count connected nodes or log NACKs.
func WithCallbacks(cb serverv3.Callbacks) Option {
	return func(s *Server) { s.callbacks = cb }
}

// NewServer returns a Server with an empty cache: clients that connect
// before the first Update wait for it. A nil logger discards.
func NewServer(logger *slog.Logger, opts ...Option) *Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{logger: logger}
	for _, o := range opts {
		o(s)
	}
	if s.callbacks == nil {
		s.callbacks = s.defaultCallbacks()
	}
	s.acks = newAcks()
	s.callbacks = tracking{Callbacks: s.callbacks, acks: s.acks}
	s.cache = cache.NewSnapshotCache(true, sameForAll{}, cacheLogger{logger})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.xds = serverv3.NewServer(ctx, s.cache, s.callbacks)
	return s
}

// defaultCallbacks logs stream opens and closes at debug level and NACKs
// (a client rejecting resources) at warning level.
func (s *Server) defaultCallbacks() serverv3.Callbacks {
	return serverv3.CallbackFuncs{
		StreamOpenFunc: func(_ context.Context, id int64, typeURL string) error {
			s.logger.Debug("xds stream opened", "stream", id, "type", typeURL)
			return nil
		},
		StreamClosedFunc: func(id int64, node *corev3.Node) {
			s.logger.Debug("xds stream closed", "stream", id, "node", node.GetId())
		},
		StreamRequestFunc: func(id int64, req *discoverygrpc.DiscoveryRequest) error {
			if req.GetErrorDetail() != nil {
				s.logger.Warn("xds client rejected resources", "stream", id, "node", req.GetNode().GetId(),
					"type", req.GetTypeUrl(), "version", req.GetVersionInfo(), "error", req.GetErrorDetail().GetMessage())
			}
			return nil
		},
	}
}

// Update builds a snapshot of in, validates it and publishes it to every
// node. Publishing an Input that gives the same resources is a no-op; an
// invalid Input leaves the current snapshot in place.
func (s *Server) Update(ctx context.Context, in *Input) error {
	// Build under the lock so concurrent Updates publish in call order.
	s.mu.Lock()
	defer s.mu.Unlock()
	snap, err := Build(in, "")
	if err != nil {
		return err
	}
	version := snap.GetVersion(resource.ListenerType)
	if version == s.version {
		return nil
	}
	if err := s.cache.SetSnapshot(ctx, SnapshotKey, snap); err != nil {
		return fmt.Errorf("xds: publish snapshot %s: %w", version, err)
	}
	s.version = version
	s.logger.Info("xds snapshot published", "version", version,
		"clusters", len(snap.GetResources(resource.ClusterType)))
	return nil
}

// Version is the version of the published snapshot, "" before the first
// Update.
func (s *Server) Version() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// Cache is the snapshot cache, for callers that serve it another way.
func (s *Server) Cache() cache.SnapshotCache { return s.cache }

// Register adds ADS and the separate LDS, RDS, CDS and EDS services to g.
func (s *Server) Register(g *grpc.Server) {
	discoverygrpc.RegisterAggregatedDiscoveryServiceServer(g, s.xds)
	listenerservice.RegisterListenerDiscoveryServiceServer(g, s.xds)
	routeservice.RegisterRouteDiscoveryServiceServer(g, s.xds)
	clusterservice.RegisterClusterDiscoveryServiceServer(g, s.xds)
	endpointservice.RegisterEndpointDiscoveryServiceServer(g, s.xds)
}

// Stop ends every open xDS stream. xDS streams never end on their own, so
// call Stop before grpc.Server.GracefulStop, or that waits forever.
func (s *Server) Stop() { s.cancel() }

// cacheLogger adapts slog to go-control-plane's logger. The cache logs every
// watch at debug level, so the debug check is done before formatting.
type cacheLogger struct{ l *slog.Logger }

func (c cacheLogger) Debugf(format string, args ...any) {
	if c.l.Enabled(context.Background(), slog.LevelDebug) {
		c.l.Debug(fmt.Sprintf(format, args...), "component", "xds-cache")
	}
}

func (c cacheLogger) Infof(format string, args ...any) {
	c.l.Info(fmt.Sprintf(format, args...), "component", "xds-cache")
}

func (c cacheLogger) Warnf(format string, args ...any) {
	c.l.Warn(fmt.Sprintf(format, args...), "component", "xds-cache")
}

func (c cacheLogger) Errorf(format string, args ...any) {
	c.l.Error(fmt.Sprintf(format, args...), "component", "xds-cache")
}
