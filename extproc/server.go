package extproc

import (
	"context"
	"errors"
	"net"
	"runtime"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
)

// Flow-control windows: a BUFFERED body travels as one message, so the
// grpc-go default of 64 KiB would cost a round trip per 64 KiB (§6 G2).
const (
	streamWindow = 4 << 20
	connWindow   = 16 << 20
	// recvSlack covers the protobuf framing around the largest body, and
	// BUFFERED responses larger than requests (embeddings).
	recvSlack = 1 << 20
	minRecv   = 64 << 20
)

// NewGRPCServer returns a gRPC server with p registered as the ext_proc service
// and the standard health service, tuned for Envoy: receive limit above the body
// limit, large flow-control windows, keepalive enforcement compatible with
// Envoy's HTTP/2 connection keepalive. opts are appended (they win).
func NewGRPCServer(p *Processor, opts ...grpc.ServerOption) *grpc.Server {
	s := grpc.NewServer(append(serverOptions(p), opts...)...)
	extprocv3.RegisterExternalProcessorServer(s, p)
	healthpb.RegisterHealthServer(s, p.health)
	p.health.SetServingStatus(extprocv3.ExternalProcessor_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s
}

// serverOptions are the gRPC settings of NewGRPCServer.
func serverOptions(p *Processor) []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(max(p.maxBody+recvSlack, minRecv)),
		grpc.InitialWindowSize(streamWindow),
		grpc.InitialConnWindowSize(connWindow),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             time.Second, // Envoy is trusted; tolerate tight connection_keepalive
			PermitWithoutStream: true,
		}),
		grpc.KeepaliveParams(keepalive.ServerParameters{
			Time:    30 * time.Second,
			Timeout: 10 * time.Second,
		}),
		// One ext_proc stream per in-flight HTTP request: allow many.
		grpc.MaxConcurrentStreams(1 << 16),
		// Reuse goroutines for new streams (one stream per HTTP request).
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		// Envoy's messages decoded without protobuf's reflection (codec.go).
		// ForceServerCodecV2 is marked experimental in grpc-go 1.x.
		grpc.ForceServerCodecV2(newCodec()),
	}
}

// Serve serves p on lis (TCP or Unix socket) until ctx ends, then stops
// gracefully: health turns NOT_SERVING, in-flight streams finish (and settle)
// within the shutdown timeout, after which the rest are cut — a cut stream still
// settles what it observed.
func (p *Processor) Serve(ctx context.Context, lis net.Listener, opts ...grpc.ServerOption) error {
	srv := NewGRPCServer(p, opts...)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	p.health.Shutdown()
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(p.shutdownTimeout)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		srv.Stop()
		<-stopped
	}
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}
