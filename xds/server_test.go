package xds

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/envoy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// propagation is how long a published snapshot may take to reach a client.
const propagation = time.Second

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// startServer serves s on 127.0.0.1 and returns a client connection.
func startServer(t *testing.T, s *Server) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	s.Register(g)
	done := make(chan error, 1)
	go func() { done <- g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, conn.Close())
		s.Stop() // ends the ADS streams so GracefulStop returns
		g.GracefulStop()
		require.NoError(t, <-done)
	})
	return conn
}

// adsClient is an Envoy-like ADS client: one stream, CDS and LDS as
// wildcards, RDS by name, every response ACKed.
type adsClient struct {
	t      *testing.T
	stream discoveryv3.AggregatedDiscoveryService_StreamAggregatedResourcesClient
	node   *corev3.Node
	resps  chan *discoveryv3.DiscoveryResponse
}

func newADSClient(ctx context.Context, t *testing.T, conn *grpc.ClientConn, nodeID string) *adsClient {
	t.Helper()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	c := &adsClient{
		t: t, stream: stream,
		node:  &corev3.Node{Id: nodeID, Cluster: "test"},
		resps: make(chan *discoveryv3.DiscoveryResponse, 16),
	}
	go func() {
		defer close(c.resps)
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			c.resps <- resp
		}
	}()
	for _, req := range []*discoveryv3.DiscoveryRequest{
		{TypeUrl: resource.ClusterType},
		{TypeUrl: resource.ListenerType},
		{TypeUrl: resource.RouteType, ResourceNames: []string{envoy.RouteConfigName}},
	} {
		req.Node = c.node
		require.NoError(t, stream.Send(req))
	}
	return c
}

// next waits for the next response and ACKs it.
func (c *adsClient) next() *discoveryv3.DiscoveryResponse {
	c.t.Helper()
	select {
	case resp, ok := <-c.resps:
		require.True(c.t, ok, "ADS stream ended")
		ack := &discoveryv3.DiscoveryRequest{
			Node: c.node, TypeUrl: resp.GetTypeUrl(), VersionInfo: resp.GetVersionInfo(),
			ResponseNonce: resp.GetNonce(),
		}
		if resp.GetTypeUrl() == resource.RouteType {
			ack.ResourceNames = []string{envoy.RouteConfigName}
		}
		require.NoError(c.t, c.stream.Send(ack))
		return resp
	case <-time.After(propagation):
		c.t.Fatal("no xDS response within", propagation)
		return nil
	}
}

// nextAll collects one response per resource type.
func (c *adsClient) nextAll() map[string]*discoveryv3.DiscoveryResponse {
	c.t.Helper()
	got := map[string]*discoveryv3.DiscoveryResponse{}
	for len(got) < 3 {
		resp := c.next()
		require.NotContains(c.t, got, resp.GetTypeUrl(), "duplicate response")
		got[resp.GetTypeUrl()] = resp
	}
	return got
}

func clusterNames(t *testing.T, resp *discoveryv3.DiscoveryResponse) []string {
	t.Helper()
	var names []string
	for _, a := range resp.GetResources() {
		var c clusterv3.Cluster
		require.NoError(t, a.UnmarshalTo(&c))
		names = append(names, c.GetName())
	}
	return names
}

func baseInput() *Input {
	return &Input{
		ExtProc: Address{Host: "127.0.0.1", Port: 9002},
		Upstreams: []Upstream{
			{Deployment: "openai", Scheme: "https", Host: "api.openai.com", HTTP2: true},
		},
	}
}

func TestServerADS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	s := NewServer(testLogger(t))
	conn := startServer(t, s)
	require.Empty(t, s.Version())

	// A client that connects before the first Update waits for it.
	c := newADSClient(ctx, t, conn, "envoy-1")
	select {
	case resp := <-c.resps:
		t.Fatalf("response before any snapshot: %v", resp)
	case <-time.After(100 * time.Millisecond):
	}

	in := baseInput()
	require.NoError(t, s.Update(ctx, in))
	v1 := s.Version()
	require.Len(t, v1, 16)

	got := c.nextAll()
	want, err := Build(in, v1)
	require.NoError(t, err)
	for typeURL, resp := range got {
		require.Equal(t, v1, resp.GetVersionInfo(), typeURL)
		wantRes := want.GetResources(typeURL)
		require.Len(t, resp.GetResources(), len(wantRes), typeURL)
		for _, a := range resp.GetResources() {
			m, err := a.UnmarshalNew()
			require.NoError(t, err)
			name := m.(interface{ GetName() string }).GetName()
			require.Contains(t, wantRes, name)
			require.True(t, proto.Equal(wantRes[name], m), "%s %s differs from Build", typeURL, name)
		}
	}
	var l listenerv3.Listener
	require.NoError(t, got[resource.ListenerType].GetResources()[0].UnmarshalTo(&l))
	require.Equal(t, envoy.ListenerName, l.GetName())
	var rc routev3.RouteConfiguration
	require.NoError(t, got[resource.RouteType].GetResources()[0].UnmarshalTo(&rc))
	require.Equal(t, envoy.RouteConfigName, rc.GetName())
	require.ElementsMatch(t, []string{"deployment_openai", envoy.ExtProcCluster}, clusterNames(t, got[resource.ClusterType]))

	// The same input again publishes nothing.
	require.NoError(t, s.Update(ctx, baseInput()))
	require.Equal(t, v1, s.Version())
	select {
	case resp := <-c.resps:
		t.Fatalf("response for an unchanged input: %v", resp)
	case <-time.After(100 * time.Millisecond):
	}

	// An invalid input is refused and the published snapshot stays.
	bad := baseInput()
	bad.Upstreams[0].Scheme = "gopher"
	require.ErrorIs(t, s.Update(ctx, bad), ErrInvalidInput)
	require.Equal(t, v1, s.Version())

	// An admin change reaches the client within a second.
	changed := baseInput()
	changed.Upstreams = append(changed.Upstreams, Upstream{Deployment: "anthropic", Scheme: "https", Host: "api.anthropic.com"})
	start := time.Now()
	require.NoError(t, s.Update(ctx, changed))
	v2 := s.Version()
	require.NotEqual(t, v1, v2)
	got = c.nextAll()
	require.Less(t, time.Since(start), propagation)
	for typeURL, resp := range got {
		require.Equal(t, v2, resp.GetVersionInfo(), typeURL)
	}
	require.ElementsMatch(t, []string{"deployment_openai", "deployment_anthropic", envoy.ExtProcCluster},
		clusterNames(t, got[resource.ClusterType]))
	require.NoError(t, got[resource.RouteType].GetResources()[0].UnmarshalTo(&rc))
	require.Len(t, rc.GetVirtualHosts()[0].GetRoutes(), len(HealthPaths)+3)

	// Stop ends the stream.
	s.Stop()
	select {
	case _, ok := <-c.resps:
		require.False(t, ok, "stream must end after Stop")
	case <-time.After(propagation):
		t.Fatal("stream still open after Stop")
	}
	_, err = c.stream.Recv()
	require.Error(t, err)
	require.NotErrorIs(t, err, io.ErrUnexpectedEOF)
}

// TestServerSameSnapshotForEveryNode: node ids do not matter.
func TestServerSameSnapshotForEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := NewServer(testLogger(t))
	conn := startServer(t, s)
	require.NoError(t, s.Update(ctx, baseInput()))

	var versions []string
	for _, id := range []string{"envoy-a", "envoy-b", ""} {
		c := newADSClient(ctx, t, conn, id)
		got := c.nextAll()
		require.ElementsMatch(t, []string{"deployment_openai", envoy.ExtProcCluster}, clusterNames(t, got[resource.ClusterType]))
		versions = append(versions, got[resource.ClusterType].GetVersionInfo())
	}
	require.Equal(t, []string{s.Version(), s.Version(), s.Version()}, versions)
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestServerLogsNACK: a client rejecting resources is logged as a warning
// with its error, and custom callbacks see every request.
func TestServerLogsNACK(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var logs syncBuffer
	s := NewServer(slog.New(slog.NewTextHandler(&logs, nil)))
	conn := startServer(t, s)
	require.NoError(t, s.Update(ctx, baseInput()))

	c := newADSClient(ctx, t, conn, "envoy-nack")
	resp := <-c.resps
	require.NotNil(t, resp)
	require.NoError(t, c.stream.Send(&discoveryv3.DiscoveryRequest{
		Node: c.node, TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(),
		ErrorDetail: &status.Status{Code: 3, Message: "cluster rejected: test"},
	}))
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "xds client rejected resources") &&
			strings.Contains(logs.String(), "cluster rejected: test")
	}, propagation, 10*time.Millisecond, logs.String())
}

func TestServerWithCallbacks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var nodes []string
	s := NewServer(nil, WithCallbacks(serverv3.CallbackFuncs{
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			mu.Lock()
			defer mu.Unlock()
			nodes = append(nodes, req.GetNode().GetId())
			return nil
		},
	}))
	conn := startServer(t, s)
	require.NoError(t, s.Update(ctx, baseInput()))
	c := newADSClient(ctx, t, conn, "envoy-cb")
	c.nextAll()
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, nodes)
	require.Equal(t, "envoy-cb", nodes[0])
}

// TestServerUpdateReachesEveryNode: one Update reaches every connected node.
func TestServerUpdateReachesEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := NewServer(nil)
	conn := startServer(t, s)
	require.NoError(t, s.Update(ctx, baseInput()))
	clients := make([]*adsClient, 0, 3)
	for _, id := range []string{"envoy-a", "envoy-b", "edge-1"} {
		c := newADSClient(ctx, t, conn, id)
		c.nextAll()
		clients = append(clients, c)
	}
	changed := baseInput()
	changed.Upstreams[0].Host = "api2.openai.com"
	start := time.Now()
	require.NoError(t, s.Update(ctx, changed))
	for _, c := range clients {
		got := c.nextAll()
		require.Equal(t, s.Version(), got[resource.ClusterType].GetVersionInfo(), c.node.GetId())
	}
	require.Less(t, time.Since(start), propagation)
}

// WaitApplied returns at once with no client, waits while a connected
// client has not acknowledged the published version (a NACK does not count),
// and returns once it has.
func TestServerWaitApplied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := NewServer(testLogger(t))
	conn := startServer(t, s)
	require.NoError(t, s.Update(ctx, baseInput()))
	require.NoError(t, s.WaitApplied(ctx), "no data plane connected")

	c := newADSClient(ctx, t, conn, "envoy-1")
	c.nextAll() // every type ACKed
	require.NoError(t, s.WaitApplied(ctx))

	in := baseInput()
	in.Upstreams = append(in.Upstreams, Upstream{Deployment: "second", Scheme: "https", Host: "example.com"})
	require.NoError(t, s.Update(ctx, in))
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, s.WaitApplied(short), context.DeadlineExceeded, "the client has not ACKed the new version")

	// The client rejects the clusters: still not applied.
	var resp *discoveryv3.DiscoveryResponse
	select {
	case resp = <-c.resps:
	case <-time.After(propagation):
		t.Fatal("no xDS response within", propagation)
	}
	require.Equal(t, resource.ClusterType, resp.GetTypeUrl())
	require.NoError(t, c.stream.Send(&discoveryv3.DiscoveryRequest{
		Node: c.node, TypeUrl: resp.GetTypeUrl(), ResponseNonce: resp.GetNonce(),
		ErrorDetail: &status.Status{Message: "rejected"},
	}))
	short2, cancelShort2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort2()
	require.ErrorIs(t, s.WaitApplied(short2), context.DeadlineExceeded, "a NACK is not an ACK")

	// The next version is acknowledged for every type the client subscribed to.
	in.Upstreams = in.Upstreams[:1]
	require.NoError(t, s.Update(ctx, in))
	done := make(chan error, 1)
	go func() { done <- s.WaitApplied(ctx) }()
	for {
		select {
		case err := <-done:
			require.NoError(t, err)
			return
		case r, ok := <-c.resps:
			require.True(t, ok, "ADS stream ended")
			ack := &discoveryv3.DiscoveryRequest{Node: c.node, TypeUrl: r.GetTypeUrl(), VersionInfo: r.GetVersionInfo(), ResponseNonce: r.GetNonce()}
			if r.GetTypeUrl() == resource.RouteType {
				ack.ResourceNames = []string{envoy.RouteConfigName}
			}
			require.NoError(t, c.stream.Send(ack))
		case <-ctx.Done():
			t.Fatal("WaitApplied did not return once every type was ACKed")
		}
	}
}
