package edge

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/envoy"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// --- xDS: go-control-plane's snapshot cache and server on loopback ---

type xdsServer struct {
	cache   cache.SnapshotCache
	conn    *grpc.ClientConn
	version int
	mu      sync.Mutex
	nacks   []string
}

func startXDS(t *testing.T) *xdsServer {
	t.Helper()
	return startXDSBench(t)
}

// startXDSBench is startXDS for tests and benchmarks.
func startXDSBench(t testing.TB) *xdsServer {
	t.Helper()
	x := &xdsServer{cache: cache.NewSnapshotCache(true, cache.IDHash{}, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	cb := serverv3.CallbackFuncs{StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
		if req.GetErrorDetail() != nil {
			x.mu.Lock()
			x.nacks = append(x.nacks, req.GetTypeUrl()+": "+req.GetErrorDetail().GetMessage())
			x.mu.Unlock()
		}
		return nil
	}}
	srv := serverv3.NewServer(ctx, x.cache, cb)
	g := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, srv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	x.conn = conn
	t.Cleanup(func() {
		cancel()
		_ = conn.Close()
		g.Stop()
	})
	return x
}

func (x *xdsServer) nackList() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.nacks...)
}

// set publishes a snapshot for the edge's node.
func (x *xdsServer) set(t testing.TB, l *listenerv3.Listener, rc *routev3.RouteConfiguration, clusters ...*clusterv3.Cluster) {
	t.Helper()
	x.version++
	cl := make([]types.Resource, len(clusters))
	for i, c := range clusters {
		cl[i] = c
	}
	snap, err := cache.NewSnapshot("v"+strconv.Itoa(x.version), map[resource.Type][]types.Resource{
		resource.ListenerType: {l},
		resource.RouteType:    {rc},
		resource.ClusterType:  cl,
	})
	require.NoError(t, err)
	require.NoError(t, x.cache.SetSnapshot(context.Background(), nodeID, snap))
}

const nodeID = "edge-test"

// --- resources shaped like Tollgate's xDS output ---

func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

// extProcFilter is the production ext_proc filter of spec §6.
func extProcFilter() *extprocfilterv3.ExternalProcessor {
	return &extprocfilterv3.ExternalProcessor{
		GrpcService: &corev3.GrpcService{TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
			EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: envoy.ExtProcCluster},
		}},
		ProcessingMode: &extprocfilterv3.ProcessingMode{
			RequestHeaderMode:   extprocfilterv3.ProcessingMode_SEND,
			RequestBodyMode:     extprocfilterv3.ProcessingMode_BUFFERED,
			RequestTrailerMode:  extprocfilterv3.ProcessingMode_SKIP,
			ResponseHeaderMode:  extprocfilterv3.ProcessingMode_SEND,
			ResponseBodyMode:    extprocfilterv3.ProcessingMode_BUFFERED,
			ResponseTrailerMode: extprocfilterv3.ProcessingMode_SEND,
		},
		AllowModeOverride: true,
		MessageTimeout:    durationpb.New(5 * time.Second),
		MaxMessageTimeout: durationpb.New(60 * time.Second),
		MutationRules:     &mutationrulesv3.HeaderMutationRules{DisallowIsError: wrapperspb.Bool(true)},
	}
}

func listener(t testing.TB, bufferLimit uint32, ep *extprocfilterv3.ExternalProcessor) *listenerv3.Listener {
	t.Helper()
	var filters []*hcmv3.HttpFilter
	if ep != nil {
		filters = append(filters, &hcmv3.HttpFilter{Name: envoy.ExtProcFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, ep)}})
	}
	filters = append(filters, &hcmv3.HttpFilter{Name: envoy.RouterFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})}})
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: "tollgate",
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			RouteConfigName: envoy.RouteConfigName,
			ConfigSource: &corev3.ConfigSource{
				ResourceApiVersion:    corev3.ApiVersion_V3,
				ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
			},
		}},
		StreamIdleTimeout: durationpb.New(300 * time.Second),
		HttpFilters:       filters,
	}
	return &listenerv3.Listener{
		Name:                          envoy.ListenerName,
		Address:                       sockAddr("127.0.0.1", 0),
		PerConnectionBufferLimitBytes: wrapperspb.UInt32(bufferLimit),
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{
			Name:       "envoy.filters.network.http_connection_manager",
			ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)},
		}}}},
	}
}

func sockAddr(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address: host, PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

const notFoundBody = `{"error":{"message":"no deployment serves this request","type":"invalid_request_error"}}`

// deployment is one route: header value → cluster, with its Host.
type deployment struct {
	id, host string
	idle     time.Duration
	perTry   time.Duration // per_try_timeout, none when 0
}

func routes(deps ...deployment) *routev3.RouteConfiguration {
	var rs []*routev3.Route
	for _, d := range deps {
		idle := d.idle
		if idle == 0 {
			idle = 300 * time.Second
		}
		rs = append(rs, &routev3.Route{
			Name: envoy.ClusterName(d.id),
			Match: &routev3.RouteMatch{
				PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
				Headers: []*routev3.HeaderMatcher{{
					Name: envoy.RouteHeader,
					HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
						MatchPattern: &matcherv3.StringMatcher_Exact{Exact: d.id},
					}},
				}},
			},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier:     &routev3.RouteAction_Cluster{Cluster: envoy.ClusterName(d.id)},
				HostRewriteSpecifier: &routev3.RouteAction_HostRewriteLiteral{HostRewriteLiteral: d.host},
				Timeout:              durationpb.New(0),
				IdleTimeout:          durationpb.New(idle),
				RetryPolicy:          retryPolicy(d.perTry),
			}},
		})
	}
	rs = append(rs, &routev3.Route{
		Name:  envoy.NotFoundRouteName,
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: 404,
			Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: notFoundBody}},
		}},
		ResponseHeadersToAdd: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "content-type", Value: "application/json"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
	})
	return &routev3.RouteConfiguration{
		Name: envoy.RouteConfigName,
		VirtualHosts: []*routev3.VirtualHost{{
			Name: envoy.VirtualHostName, Domains: []string{"*"}, Routes: rs,
		}},
	}
}

// clusterOpts shape a deployment cluster.
type clusterOpts struct {
	http2     bool
	auto      bool   // auto_config (ALPN)
	tlsSNI    string // TLS when set
	trustedCA string // filename
	san       string
}

func upstreamCluster(t testing.TB, id, addr string, o clusterOpts) *clusterv3.Cluster {
	t.Helper()
	host, portStr, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(portStr)
	require.NoError(t, err)
	name := envoy.ClusterName(id)
	opts := &httpv3.HttpProtocolOptions{}
	h2 := &corev3.Http2ProtocolOptions{ConnectionKeepalive: &corev3.KeepaliveSettings{
		Interval: durationpb.New(30 * time.Second), Timeout: durationpb.New(10 * time.Second),
	}}
	switch {
	case o.auto:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_AutoConfig{AutoConfig: &httpv3.HttpProtocolOptions_AutoHttpConfig{
			HttpProtocolOptions: &corev3.Http1ProtocolOptions{}, Http2ProtocolOptions: h2,
		}}
	case o.http2:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: h2},
		}}
	default:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{HttpProtocolOptions: &corev3.Http1ProtocolOptions{}},
		}}
	}
	c := &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(2 * time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC},
		LoadAssignment: &endpointv3.ClusterLoadAssignment{ClusterName: name, Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: sockAddr(host, uint32(port)),
			}}}},
		}}},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{httpOptionsKey: mustAny(t, opts)},
	}
	if o.tlsSNI != "" {
		vc := &tlsv3.CertificateValidationContext{
			TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: o.trustedCA}},
		}
		if o.san != "" {
			vc.MatchTypedSubjectAltNames = []*tlsv3.SubjectAltNameMatcher{{
				SanType: tlsv3.SubjectAltNameMatcher_DNS,
				Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: o.san}},
			}}
		}
		c.TransportSocket = &corev3.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &corev3.TransportSocket_TypedConfig{
			TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{
				Sni:              o.tlsSNI,
				CommonTlsContext: &tlsv3.CommonTlsContext{ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: vc}},
			}),
		}}
	}
	return c
}

// --- a fake ext_proc processor: routes on x-pick, streams SSE ---

type fakeProc struct {
	extprocv3.UnimplementedExternalProcessorServer
	mu      sync.Mutex
	streams int
	ended   chan error // one per finished Process call
	chunks  [][]byte   // response body chunks seen
}

func newFakeProc() *fakeProc { return &fakeProc{ended: make(chan error, 1024)} }

// end reports the end of a Process call (dropped when nobody listens, as in
// benchmarks).
func (p *fakeProc) end(err error) {
	select {
	case p.ended <- err:
	default:
	}
}

func setRoute(v string) *extprocv3.HeaderMutation {
	return &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
		Header: &corev3.HeaderValue{Key: envoy.RouteHeader, RawValue: []byte(v)},
	}}}
}

// Process: request headers CONTINUE (or route at once when there is no
// body), the route set with clear_route_cache in the body reply, "deny" gets
// a 401, SSE responses switch to STREAMED.
func (p *fakeProc) Process(stream extprocv3.ExternalProcessor_ProcessServer) error {
	p.mu.Lock()
	p.streams++
	p.mu.Unlock()
	st := fakeStream{p: p}
	for {
		req, err := stream.Recv()
		if err != nil {
			p.end(err)
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		resp := st.handle(req, false)
		if resp == nil {
			continue
		}
		if err := stream.Send(resp); err != nil {
			p.end(err)
			return err
		}
	}
}

// sync connects to p as the built-in data plane connects to Tollgate's
// processor: each message a call in the request's goroutine.
func (p *fakeProc) sync() extprocfilter.Transport {
	return extprocfilter.Sync(func(ctx context.Context) extprocfilter.SyncStream {
		p.mu.Lock()
		p.streams++
		p.mu.Unlock()
		return &fakeSyncStream{fakeStream: fakeStream{p: p}, ctx: ctx}
	})
}

type fakeSyncStream struct {
	fakeStream
	ctx context.Context
}

func (s *fakeSyncStream) Handle(req *extprocv3.ProcessingRequest, send func(*extprocv3.ProcessingResponse)) error {
	if resp := s.handle(req, true); resp != nil {
		send(resp)
	}
	return nil
}

// Close: what a Process loop's Recv would have returned.
func (s *fakeSyncStream) Close() {
	if err := s.ctx.Err(); err != nil {
		s.p.end(status.FromContextError(err).Err())
		return
	}
	s.p.end(io.EOF)
}

// fakeStream is the per-stream logic of fakeProc.
type fakeStream struct {
	p    *fakeProc
	pick string
}

// handle returns the reply to req, nil for none. copyKept: req is the
// processor's only while it handles it (Sync), so what it keeps is copied.
func (st *fakeStream) handle(req *extprocv3.ProcessingRequest, copyKept bool) *extprocv3.ProcessingResponse {
	p := st.p
	switch r := req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		h := extprocfilter.HeadersFromProto(r.RequestHeaders.GetHeaders())
		st.pick = h.Value("x-pick")
		if st.pick == "deny" {
			return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
				Status: &typev3.HttpStatus{Code: typev3.StatusCode_Unauthorized},
				Body:   []byte(`{"error":"denied"}`),
			}}}
		}
		cr := &extprocv3.CommonResponse{}
		if r.RequestHeaders.GetEndOfStream() {
			cr.HeaderMutation = setRoute(st.pick)
			cr.ClearRouteCache = true
		}
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_RequestBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{
			Response: &extprocv3.CommonResponse{HeaderMutation: setRoute(st.pick), ClearRouteCache: true},
		}}}
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		h := extprocfilter.HeadersFromProto(r.ResponseHeaders.GetHeaders())
		hr := &extprocv3.HeadersResponse{Response: &extprocv3.CommonResponse{}}
		resp := &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: hr}}
		if strings.HasPrefix(h.Value("content-type"), "text/event-stream") {
			hr.Response.HeaderMutation = &extprocv3.HeaderMutation{RemoveHeaders: []string{"content-length"}}
			resp.ModeOverride = &extprocfilterv3.ProcessingMode{
				RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
				ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
			}
		}
		return resp
	case *extprocv3.ProcessingRequest_ResponseBody:
		body := r.ResponseBody.GetBody()
		if copyKept {
			body = bytes.Clone(body)
		}
		p.mu.Lock()
		if len(p.chunks) < 1024 {
			p.chunks = append(p.chunks, body)
		}
		p.mu.Unlock()
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}}
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}
	}
	return nil
}

// serveProcessor runs a fake processor's stream: each message gets the
// reply of its kind, carrying the CommonResponse step fills in.
func serveProcessor(stream extprocv3.ExternalProcessor_ProcessServer, step func(req *extprocv3.ProcessingRequest, cr *extprocv3.CommonResponse)) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		cr := &extprocv3.CommonResponse{}
		step(req, cr)
		if err := stream.Send(replyTo(req, cr)); err != nil {
			return err
		}
	}
}

// replyTo is the reply to req of its kind with cr (trailers: its header
// mutation).
func replyTo(req *extprocv3.ProcessingRequest, cr *extprocv3.CommonResponse) *extprocv3.ProcessingResponse {
	switch req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_RequestBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_ResponseBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: cr}}}
	default:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{HeaderMutation: cr.HeaderMutation}}}
	}
}

// --- edge under test ---

func startEdge(t *testing.T, proc extprocfilter.Transport, x *xdsServer, opts ...Option) *Edge {
	t.Helper()
	e := New(proc, append([]Option{WithListenOverride("127.0.0.1:0")}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunADS(ctx, x.conn, nodeID) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		require.NoError(t, e.Shutdown(sctx))
	})
	select {
	case <-e.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("edge not ready")
	}
	return e
}

// client is an HTTP client whose idle connections close with the test.
func client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// upstream is a loopback HTTP server.
func upstream(t *testing.T, h http.Handler) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { _ = srv.Close() })
	return lis.Addr().String()
}

func listenerTyped(t *testing.T, hcm *hcmv3.HttpConnectionManager) *listenerv3.Filter_TypedConfig {
	t.Helper()
	return &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)}
}

// selfSigned is a PEM self-signed certificate unrelated to any test server.
func selfSigned(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func retryPolicy(perTry time.Duration) *routev3.RetryPolicy {
	p := &routev3.RetryPolicy{RetryOn: "connect-failure,refused-stream", NumRetries: wrapperspb.UInt32(2)}
	if perTry > 0 {
		p.PerTryTimeout = durationpb.New(perTry)
	}
	return p
}
