package xds

import (
	"cmp"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/envoy"
)

// Keepalive settings. TCP keepalive keeps idle provider connections (and NAT
// entries) alive between requests; HTTP/2 PINGs detect dead connections.
const (
	tcpKeepaliveTime     = 60 // seconds idle before the first probe
	tcpKeepaliveInterval = 15 // seconds between probes
	tcpKeepaliveProbes   = 3
	h2PingInterval       = 30 * time.Second
	h2PingTimeout        = 10 * time.Second
	extProcConnectTime   = 1 * time.Second
)

// upstreamCluster builds the cluster of one deployment, envoy.ClusterName.
func (b *builder) upstreamCluster(u Upstream) *clusterv3.Cluster {
	name := envoy.ClusterName(u.Deployment)
	c := &clusterv3.Cluster{
		Name:            name,
		ConnectTimeout:  durationpb.New(cmp.Or(u.ConnectTimeout, b.in.ConnectTimeout)),
		LoadAssignment:  loadAssignment(name, socketAddress(u.Host, u.Port)),
		CircuitBreakers: b.circuitBreakers(),
		UpstreamConnectionOptions: &clusterv3.UpstreamConnectionOptions{
			TcpKeepalive: &corev3.TcpKeepalive{
				KeepaliveTime:     wrapperspb.UInt32(tcpKeepaliveTime),
				KeepaliveInterval: wrapperspb.UInt32(tcpKeepaliveInterval),
				KeepaliveProbes:   wrapperspb.UInt32(tcpKeepaliveProbes),
			},
		},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			httpOptionsKey: b.any(upstreamProtocolOptions(u)),
		},
	}
	setDiscovery(c, u.Host)
	if u.Scheme == "https" {
		c.TransportSocket = &corev3.TransportSocket{
			Name:       tlsSocketName,
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: b.any(upstreamTLS(u))},
		}
	}
	return c
}

// upstreamProtocolOptions: https with HTTP2 negotiates h2 or HTTP/1.1 by ALPN
// (auto_config); https without HTTP2 is HTTP/1.1; http is HTTP/2 with prior
// knowledge when HTTP2, else HTTP/1.1.
func upstreamProtocolOptions(u Upstream) *httpv3.HttpProtocolOptions {
	h2 := &corev3.Http2ProtocolOptions{ConnectionKeepalive: h2Keepalive()}
	opts := &httpv3.HttpProtocolOptions{}
	switch {
	case u.Scheme == "https" && u.HTTP2:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_AutoConfig{AutoConfig: &httpv3.HttpProtocolOptions_AutoHttpConfig{
			HttpProtocolOptions:  &corev3.Http1ProtocolOptions{},
			Http2ProtocolOptions: h2,
		}}
	case u.HTTP2:
		opts.UpstreamProtocolOptions = explicitHTTP2(h2)
	default:
		opts.UpstreamProtocolOptions = &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{
				HttpProtocolOptions: &corev3.Http1ProtocolOptions{},
			},
		}}
	}
	return opts
}

func explicitHTTP2(h2 *corev3.Http2ProtocolOptions) *httpv3.HttpProtocolOptions_ExplicitHttpConfig_ {
	return &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
		ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{Http2ProtocolOptions: h2},
	}}
}

func h2Keepalive() *corev3.KeepaliveSettings {
	return &corev3.KeepaliveSettings{
		Interval: durationpb.New(h2PingInterval),
		Timeout:  durationpb.New(h2PingTimeout),
	}
}

// upstreamTLS validates the provider against the system CA bundle and its
// name, with an explicit SNI. The name is the SNI as a DNS SAN (the SNI
// defaults to the host); an IP host without an SNI is checked as an IP SAN.
func upstreamTLS(u Upstream) *tlsv3.UpstreamTlsContext {
	san := &tlsv3.SubjectAltNameMatcher{
		SanType: tlsv3.SubjectAltNameMatcher_DNS,
		Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: u.SNI}},
	}
	if u.SNI == "" {
		san.SanType = tlsv3.SubjectAltNameMatcher_IP_ADDRESS
		san.Matcher = &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: u.Host}}
	}
	return &tlsv3.UpstreamTlsContext{
		Sni: u.SNI,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{
				ValidationContext: &tlsv3.CertificateValidationContext{
					TrustedCa: &corev3.DataSource{
						Specifier: &corev3.DataSource_Filename{Filename: envoy.SystemCABundle},
					},
					MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{san},
				},
			},
		},
	}
}

// extProcCluster is envoy.ExtProcCluster: gRPC (HTTP/2) to the processor
// over TCP or a Unix socket, with a buffer large enough for BUFFERED bodies.
func (b *builder) extProcCluster() *clusterv3.Cluster {
	a := b.in.ExtProc
	var addr *corev3.Address
	if a.Path != "" {
		addr = &corev3.Address{Address: &corev3.Address_Pipe{Pipe: &corev3.Pipe{Path: a.Path}}}
	} else {
		addr = socketAddress(a.Host, a.Port)
	}
	c := &clusterv3.Cluster{
		Name:                          envoy.ExtProcCluster,
		ConnectTimeout:                durationpb.New(extProcConnectTime),
		LoadAssignment:                loadAssignment(envoy.ExtProcCluster, addr),
		PerConnectionBufferLimitBytes: wrapperspb.UInt32(ExtProcBufferLimitBytes),
		CircuitBreakers:               b.circuitBreakers(),
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			httpOptionsKey: b.any(&httpv3.HttpProtocolOptions{
				UpstreamProtocolOptions: explicitHTTP2(&corev3.Http2ProtocolOptions{
					ConnectionKeepalive: h2Keepalive(),
				}),
			}),
		},
	}
	if a.Path != "" {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
	} else {
		setDiscovery(c, a.Host)
	}
	return c
}

// setDiscovery makes a cluster STATIC for an IP address and STRICT_DNS
// (IPv4 preferred) for a hostname.
func setDiscovery(c *clusterv3.Cluster, host string) {
	if isIP(host) {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
		return
	}
	c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
	c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
}

func loadAssignment(cluster string, addr *corev3.Address) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: cluster,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{Address: addr}},
			}},
		}},
	}
}

// circuitBreakers raises Envoy's default of 1024: every in-flight request
// holds an ext_proc stream and an upstream request for its whole life (G3).
func (b *builder) circuitBreakers() *clusterv3.CircuitBreakers {
	limit := b.in.CircuitBreakerMax
	return &clusterv3.CircuitBreakers{Thresholds: []*clusterv3.CircuitBreakers_Thresholds{{
		Priority:           corev3.RoutingPriority_DEFAULT,
		MaxConnections:     wrapperspb.UInt32(limit),
		MaxPendingRequests: wrapperspb.UInt32(limit),
		MaxRequests:        wrapperspb.UInt32(limit),
		MaxRetries:         wrapperspb.UInt32(limit),
	}}}
}
