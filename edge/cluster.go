package edge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/envoy"

	"github.com/tollgate-ai/tollgate/edge/h1"
)

const httpOptionsKey = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"

// Envoy cluster defaults.
const (
	defaultConnectTimeout = 5 * time.Second
	defaultCircuitMax     = 1024
	maxIdlePerHost        = h1.MaxIdleConns
)

// cluster is a compiled upstream cluster with its connection pool.
type cluster struct {
	name      string
	src       *clusterv3.Cluster
	scheme    string // "http" or "https"
	urlHost   string // host:port of the first endpoint, for the request URL
	endpoints []endpoint
	next      atomic.Uint64
	transport *http.Transport
	h1        *h1.Client // the plain-text HTTP/1.1 fast path; nil for TLS and HTTP/2
	maxReqs   int64
	inflight  atomic.Int64
	try       tryCluster // per-try routing (pertry.go)
}

type endpoint struct{ network, addr string }

func readFile(name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

// compileCluster builds a cluster and its transport.
func compileCluster(c *clusterv3.Cluster) (*cluster, error) {
	if err := c.ValidateAll(); err != nil {
		return nil, err
	}
	if c.GetClusterType() != nil {
		return compileAggregate(c)
	}
	cl := &cluster{name: c.GetName(), src: c, scheme: "http", maxReqs: defaultCircuitMax}
	switch c.GetType() {
	case clusterv3.Cluster_STATIC, clusterv3.Cluster_STRICT_DNS, clusterv3.Cluster_LOGICAL_DNS:
	default:
		return nil, fmt.Errorf("cluster %q: discovery type %v is not supported", c.GetName(), c.GetType())
	}
	for _, le := range c.GetLoadAssignment().GetEndpoints() {
		for _, lb := range le.GetLbEndpoints() {
			network, addr, err := socketAddr(lb.GetEndpoint().GetAddress())
			if err != nil {
				return nil, fmt.Errorf("cluster %q: %w", c.GetName(), err)
			}
			cl.endpoints = append(cl.endpoints, endpoint{network, addr})
		}
	}
	if len(cl.endpoints) == 0 {
		return nil, fmt.Errorf("cluster %q: no endpoints", c.GetName())
	}
	cl.readTry(c)
	cl.urlHost = cl.endpoints[0].addr
	if cl.endpoints[0].network == "unix" {
		cl.urlHost = "localhost"
	}
	maxConns := defaultCircuitMax
	for _, t := range c.GetCircuitBreakers().GetThresholds() {
		if t.GetPriority() != corev3.RoutingPriority_DEFAULT {
			continue
		}
		if v := t.GetMaxRequests(); v != nil {
			cl.maxReqs = int64(v.GetValue())
		}
		if v := t.GetMaxConnections(); v != nil {
			maxConns = int(v.GetValue())
		}
	}
	connectTimeout := defaultConnectTimeout
	if d := c.GetConnectTimeout(); d != nil {
		connectTimeout = d.AsDuration()
	}
	// As Envoy, SO_KEEPALIVE only when tcp_keepalive is configured.
	dialer := &net.Dialer{Timeout: connectTimeout, KeepAlive: -1}
	if ka := c.GetUpstreamConnectionOptions().GetTcpKeepalive(); ka != nil {
		dialer.KeepAliveConfig = net.KeepAliveConfig{
			Enable:   true,
			Idle:     time.Duration(ka.GetKeepaliveTime().GetValue()) * time.Second,
			Interval: time.Duration(ka.GetKeepaliveInterval().GetValue()) * time.Second,
			Count:    int(ka.GetKeepaliveProbes().GetValue()),
		}
	}
	dial := func(ctx context.Context) (net.Conn, error) {
		ep := cl.endpoints[cl.next.Add(1)%uint64(len(cl.endpoints))]
		return dialer.DialContext(ctx, ep.network, ep.addr)
	}
	tr := &http.Transport{
		DialContext:         func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: maxIdlePerHost,
		MaxConnsPerHost:     maxConns,
		IdleConnTimeout:     90 * time.Second,
		// The edge forwards bytes: never ask for or decode compression.
		DisableCompression:  true,
		TLSHandshakeTimeout: connectTimeout,
	}
	h2, err := protocols(c, tr)
	if err != nil {
		return nil, fmt.Errorf("cluster %q: %w", c.GetName(), err)
	}
	if ts := c.GetTransportSocket(); ts != nil {
		var up tlsv3.UpstreamTlsContext
		if err := ts.GetTypedConfig().UnmarshalTo(&up); err != nil {
			return nil, fmt.Errorf("cluster %q: transport socket: %w", c.GetName(), err)
		}
		cfg, err := tlsConfig(&up, h2)
		if err != nil {
			return nil, fmt.Errorf("cluster %q: %w", c.GetName(), err)
		}
		tr.TLSClientConfig = cfg
		cl.scheme = "https"
	} else if !h2 {
		// The h1 client gives up on a dial when its request ends (dialApart):
		// the dial itself is bound only by connect_timeout.
		cl.h1 = h1.NewClient(func() (net.Conn, error) { return dial(context.Background()) }, maxConns)
	}
	cl.transport = tr
	return cl, nil
}

// protocols applies HttpProtocolOptions (or the deprecated cluster-level
// http2_protocol_options) to tr and reports whether HTTP/2 may be used.
func protocols(c *clusterv3.Cluster, tr *http.Transport) (h2 bool, err error) {
	var p http.Protocols
	var h2opts *corev3.Http2ProtocolOptions
	secure := c.GetTransportSocket() != nil
	if a, ok := c.GetTypedExtensionProtocolOptions()[httpOptionsKey]; ok {
		var o httpv3.HttpProtocolOptions
		if err := a.UnmarshalTo(&o); err != nil {
			return false, fmt.Errorf("http protocol options: %w", err)
		}
		switch u := o.GetUpstreamProtocolOptions().(type) {
		case *httpv3.HttpProtocolOptions_ExplicitHttpConfig_:
			if h := u.ExplicitHttpConfig.GetHttp2ProtocolOptions(); h != nil {
				h2opts = h
			} else if u.ExplicitHttpConfig.GetHttp3ProtocolOptions() != nil {
				return false, errors.New("HTTP/3 is not supported")
			}
		case *httpv3.HttpProtocolOptions_AutoConfig:
			if u.AutoConfig.GetHttp3ProtocolOptions() != nil {
				return false, errors.New("HTTP/3 is not supported")
			}
			if secure {
				p.SetHTTP1(true)
				p.SetHTTP2(true)
				tr.Protocols = &p
				applyH2(tr, u.AutoConfig.GetHttp2ProtocolOptions())
				return true, nil
			}
		case *httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig:
			return false, errors.New("use_downstream_protocol_config is not supported")
		}
	} else if c.GetHttp2ProtocolOptions() != nil { //nolint:staticcheck // the deprecated field is still honoured by Envoy
		h2opts = c.GetHttp2ProtocolOptions() //nolint:staticcheck // as above
	}
	switch {
	case h2opts != nil && secure:
		p.SetHTTP2(true)
	case h2opts != nil:
		p.SetUnencryptedHTTP2(true)
	default:
		p.SetHTTP1(true)
	}
	tr.Protocols = &p
	if h2opts != nil {
		applyH2(tr, h2opts)
	}
	return h2opts != nil, nil
}

func applyH2(tr *http.Transport, o *corev3.Http2ProtocolOptions) {
	cfg := &http.HTTP2Config{}
	if ka := o.GetConnectionKeepalive(); ka != nil {
		cfg.SendPingTimeout = ka.GetInterval().AsDuration()
		cfg.PingTimeout = ka.GetTimeout().AsDuration()
	}
	if v := o.GetMaxConcurrentStreams(); v != nil {
		cfg.MaxConcurrentStreams = int(v.GetValue())
	}
	tr.HTTP2 = cfg
}

// tlsConfig reproduces an UpstreamTlsContext: SNI only when configured, the
// chain checked against trusted_ca and the SANs against
// match_typed_subject_alt_names; no validation context means no check.
func tlsConfig(up *tlsv3.UpstreamTlsContext, h2 bool) (*tls.Config, error) {
	common := up.GetCommonTlsContext()
	if len(common.GetTlsCertificates()) > 0 || len(common.GetTlsCertificateSdsSecretConfigs()) > 0 {
		return nil, errors.New("client certificates are not supported")
	}
	cfg := &tls.Config{
		ServerName:         up.GetSni(),
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, //nolint:gosec // verification is done in VerifyConnection, as the cluster configures it
	}
	if h2 {
		cfg.NextProtos = []string{"h2", "http/1.1"}
	}
	vc := common.GetValidationContext()
	if vc == nil {
		if common.GetValidationContextType() != nil {
			return nil, errors.New("only an inline validation_context is supported")
		}
		return cfg, nil
	}
	var roots *x509.CertPool
	if ca := vc.GetTrustedCa(); ca != nil {
		pem, err := dataSource(ca)
		switch {
		case err != nil && ca.GetFilename() == envoy.SystemCABundle:
			// The Debian bundle path Tollgate's xDS names is missing on this
			// machine (macOS, other distributions): use the system roots.
			if roots, err = x509.SystemCertPool(); err != nil {
				return nil, fmt.Errorf("trusted_ca: %w", err)
			}
		case err != nil:
			return nil, fmt.Errorf("trusted_ca: %w", err)
		default:
			roots = x509.NewCertPool()
			if !roots.AppendCertsFromPEM(pem) {
				return nil, errors.New("trusted_ca: no certificates")
			}
		}
	}
	sans := vc.GetMatchTypedSubjectAltNames()
	for _, m := range sans {
		if m.GetMatcher().GetExact() == "" {
			return nil, errors.New("only exact subject alt name matchers are supported")
		}
		switch m.GetSanType() {
		case tlsv3.SubjectAltNameMatcher_DNS, tlsv3.SubjectAltNameMatcher_IP_ADDRESS:
		default:
			return nil, fmt.Errorf("subject alt name type %v is not supported", m.GetSanType())
		}
	}
	sans = append([]*tlsv3.SubjectAltNameMatcher(nil), sans...)
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("edge: upstream sent no certificate")
		}
		leaf := cs.PeerCertificates[0]
		if roots != nil {
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter}); err != nil {
				return err
			}
		}
		if len(sans) == 0 {
			return nil
		}
		for _, m := range sans {
			want := m.GetMatcher().GetExact()
			if m.GetSanType() == tlsv3.SubjectAltNameMatcher_IP_ADDRESS {
				ip := net.ParseIP(want)
				for _, got := range leaf.IPAddresses {
					if ip != nil && got.Equal(ip) {
						return nil
					}
				}
				continue
			}
			for _, got := range leaf.DNSNames {
				if strings.EqualFold(got, want) || wildcardMatch(got, want) {
					return nil
				}
			}
		}
		return errors.New("edge: upstream certificate matches no configured subject alt name")
	}
	return cfg, nil
}

// wildcardMatch: a certificate name "*.example.com" covers "api.example.com".
func wildcardMatch(pattern, host string) bool {
	if !strings.HasPrefix(pattern, "*.") {
		return false
	}
	i := strings.IndexByte(host, '.')
	return i > 0 && strings.EqualFold(pattern[1:], host[i:])
}

// same reports whether c compiles to the same cluster as cl (then the pool is
// kept across updates).
func (cl *cluster) same(c *clusterv3.Cluster) bool { return proto.Equal(cl.src, c) }

// acquire takes a circuit-breaker slot (max_requests); false means overflow.
func (cl *cluster) acquire() bool {
	if cl.inflight.Add(1) > cl.maxReqs {
		cl.inflight.Add(-1)
		return false
	}
	return true
}

func (cl *cluster) release() { cl.inflight.Add(-1) }

func (cl *cluster) close() {
	if cl.transport == nil { // an aggregate
		return
	}
	cl.transport.CloseIdleConnections()
	if cl.h1 != nil {
		cl.h1.CloseIdleConnections()
	}
}
