package envoy

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite testdata/out from testdata/in")

// parseBootstrap loads YAML the way Envoy does (YAML → JSON → proto) and
// applies Envoy's validation rules to the bootstrap and its typed configs.
func parseBootstrap(t *testing.T, data []byte) *bootstrapv3.Bootstrap {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(data, &v))
	js, err := json.Marshal(v)
	require.NoError(t, err)
	var b bootstrapv3.Bootstrap
	require.NoError(t, protojson.UnmarshalOptions{}.Unmarshal(js, &b))
	require.NoError(t, b.ValidateAll())
	for _, c := range b.GetStaticResources().GetClusters() {
		require.NoError(t, c.ValidateAll())
		for name, a := range c.GetTypedExtensionProtocolOptions() {
			require.Equal(t, "envoy.extensions.upstreams.http.v3.HttpProtocolOptions", name)
			var opts httpv3.HttpProtocolOptions
			require.NoError(t, a.UnmarshalTo(&opts))
			require.NoError(t, opts.ValidateAll())
			require.NotNil(t, opts.GetExplicitHttpConfig().GetHttp2ProtocolOptions(), "gRPC needs HTTP/2")
		}
		if ts := c.GetTransportSocket(); ts != nil {
			require.Equal(t, "envoy.transport_sockets.tls", ts.GetName())
			var tc tlsv3.UpstreamTlsContext
			require.NoError(t, ts.GetTypedConfig().UnmarshalTo(&tc))
			require.NoError(t, tc.ValidateAll())
		}
	}
	return &b
}

func TestBootstrapGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/in/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, path := range inputs {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			var opts BootstrapOptions
			dec := yaml.NewDecoder(bytes.NewReader(data))
			dec.KnownFields(true)
			require.NoError(t, dec.Decode(&opts))

			got, err := Bootstrap(opts)
			require.NoError(t, err)
			b := parseBootstrap(t, got)
			require.Equal(t, orDefault(opts.NodeID, DefaultNodeID), b.GetNode().GetId())
			require.True(t, b.GetDynamicResources().GetAdsConfig().GetSetNodeOnFirstMessageOnly())
			require.Equal(t, XDSCluster, b.GetDynamicResources().GetAdsConfig().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName())
			require.NotNil(t, b.GetDynamicResources().GetLdsConfig().GetAds())
			require.NotNil(t, b.GetDynamicResources().GetCdsConfig().GetAds())
			require.Len(t, b.GetLayeredRuntime().GetLayers(), 2)

			out := filepath.Join("testdata", "out", name+".yaml")
			if *update {
				require.NoError(t, os.WriteFile(out, got, 0o644))
			}
			want, err := os.ReadFile(out)
			require.NoError(t, err, "run go test ./envoy -run TestBootstrapGolden -update")
			require.Equal(t, string(want), string(got))
		})
	}
}

func clusterByName(t *testing.T, b *bootstrapv3.Bootstrap, name string) *clusterv3.Cluster {
	t.Helper()
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

func TestBootstrapAddresses(t *testing.T) {
	for _, tc := range []struct {
		name, xds     string
		wantType      clusterv3.Cluster_DiscoveryType
		wantHost      string
		wantPort      uint32
		wantPipe      string
		extProc       string
		wantExtProc   bool
		wantAdminHost string
		admin         string
	}{
		{name: "ip", xds: "127.0.0.1:18000", wantType: clusterv3.Cluster_STATIC, wantHost: "127.0.0.1", wantPort: 18000, wantAdminHost: "127.0.0.1"},
		{name: "ipv6", xds: "[::1]:18000", wantType: clusterv3.Cluster_STATIC, wantHost: "::1", wantPort: 18000, wantAdminHost: "127.0.0.1"},
		{name: "dns", xds: "tollgate:18000", wantType: clusterv3.Cluster_STRICT_DNS, wantHost: "tollgate", wantPort: 18000, wantAdminHost: "127.0.0.1"},
		{name: "unix url", xds: "unix:///run/xds.sock", wantType: clusterv3.Cluster_STATIC, wantPipe: "/run/xds.sock", wantAdminHost: "127.0.0.1"},
		{name: "unix", xds: "unix:/run/xds.sock", wantType: clusterv3.Cluster_STATIC, wantPipe: "/run/xds.sock", wantAdminHost: "127.0.0.1"},
		{name: "path", xds: "/run/xds.sock", wantType: clusterv3.Cluster_STATIC, wantPipe: "/run/xds.sock", wantAdminHost: "127.0.0.1"},
		{name: "abstract", xds: "unix:@tollgate-xds", wantType: clusterv3.Cluster_STATIC, wantPipe: "@tollgate-xds", wantAdminHost: "127.0.0.1"},
		{name: "with ext_proc", xds: "127.0.0.1:18000", wantType: clusterv3.Cluster_STATIC, wantHost: "127.0.0.1", wantPort: 18000, extProc: "127.0.0.1:9002", wantExtProc: true, wantAdminHost: "127.0.0.1"},
		{name: "admin ipv6", xds: "127.0.0.1:18000", wantType: clusterv3.Cluster_STATIC, wantHost: "127.0.0.1", wantPort: 18000, admin: "[::1]:9000", wantAdminHost: "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Bootstrap(BootstrapOptions{XDS: tc.xds, ExtProc: tc.extProc, Admin: tc.admin})
			require.NoError(t, err)
			b := parseBootstrap(t, data)
			c := clusterByName(t, b, XDSCluster)
			require.NotNil(t, c)
			require.Equal(t, tc.wantType, c.GetType())
			addr := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress()
			require.Equal(t, tc.wantPipe, addr.GetPipe().GetPath())
			require.Equal(t, tc.wantHost, addr.GetSocketAddress().GetAddress())
			require.Equal(t, tc.wantPort, addr.GetSocketAddress().GetPortValue())
			require.Equal(t, tc.wantAdminHost, b.GetAdmin().GetAddress().GetSocketAddress().GetAddress())

			ep := clusterByName(t, b, ExtProcCluster)
			require.Equal(t, tc.wantExtProc, ep != nil)
			if ep != nil {
				require.Equal(t, uint32(ExtProcBufferLimitBytes), ep.GetPerConnectionBufferLimitBytes().GetValue())
				require.Equal(t, uint32(DefaultCircuitBreakerMax), ep.GetCircuitBreakers().GetThresholds()[0].GetMaxRequests().GetValue())
			}
		})
	}
}

func TestBootstrapRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts BootstrapOptions
		want string
	}{
		{"no xds", BootstrapOptions{}, "address is required"},
		{"no port", BootstrapOptions{XDS: "127.0.0.1"}, "missing port"},
		{"bad port", BootstrapOptions{XDS: "127.0.0.1:0"}, "bad port"},
		{"port too big", BootstrapOptions{XDS: "127.0.0.1:70000"}, "bad port"},
		{"no host", BootstrapOptions{XDS: ":18000"}, "host is missing"},
		{"relative socket", BootstrapOptions{XDS: "unix:run/xds.sock"}, "must be absolute"},
		{"yaml injection", BootstrapOptions{XDS: "a{b}:1"}, "bad host"},
		{"bad ext_proc", BootstrapOptions{XDS: "127.0.0.1:1", ExtProc: "nope"}, "ext_proc"},
		{"public admin", BootstrapOptions{XDS: "127.0.0.1:1", Admin: "0.0.0.0:9901"}, "loopback"},
		{"admin hostname", BootstrapOptions{XDS: "127.0.0.1:1", Admin: "localhost:9901"}, "loopback"},
		{"partial tls", BootstrapOptions{XDS: "127.0.0.1:1", ExtProc: "127.0.0.1:2", TLSCert: "/c.pem", TLSKey: "/k.pem"}, "together"},
		{"tls without ext_proc", BootstrapOptions{XDS: "127.0.0.1:1", TLSCA: "/ca.pem", TLSCert: "/c.pem", TLSKey: "/k.pem"}, "ext_proc address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Bootstrap(tc.opts)
			require.ErrorIs(t, err, ErrInvalidBootstrap)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestBootstrapTLS: with the TLS files, the xDS and ext_proc clusters to a
// host:port carry an UpstreamTlsContext with Envoy's client certificate, the
// CA and the server name to match; a Unix socket stays plaintext.
func TestBootstrapTLS(t *testing.T) {
	opts := BootstrapOptions{XDS: "tollgate:18000", ExtProc: "10.0.0.7:50051", TLSCA: "/etc/tollgate/ca.pem", TLSCert: "/etc/envoy/client.pem", TLSKey: "/etc/envoy/client-key.pem"}
	data, err := Bootstrap(opts)
	require.NoError(t, err)
	b := parseBootstrap(t, data)
	for name, want := range map[string]struct {
		san  tlsv3.SubjectAltNameMatcher_SanType
		host string
		sni  string
	}{
		XDSCluster:     {tlsv3.SubjectAltNameMatcher_DNS, "tollgate", "tollgate"},
		ExtProcCluster: {tlsv3.SubjectAltNameMatcher_IP_ADDRESS, "10.0.0.7", ""},
	} {
		c := clusterByName(t, b, name)
		require.NotNil(t, c, name)
		var tc tlsv3.UpstreamTlsContext
		require.NoError(t, c.GetTransportSocket().GetTypedConfig().UnmarshalTo(&tc), name)
		require.Equal(t, want.sni, tc.GetSni(), name)
		common := tc.GetCommonTlsContext()
		require.Equal(t, opts.TLSCert, common.GetTlsCertificates()[0].GetCertificateChain().GetFilename(), name)
		require.Equal(t, opts.TLSKey, common.GetTlsCertificates()[0].GetPrivateKey().GetFilename(), name)
		vc := common.GetValidationContext()
		require.Equal(t, opts.TLSCA, vc.GetTrustedCa().GetFilename(), name)
		require.Equal(t, want.san, vc.GetMatchTypedSubjectAltNames()[0].GetSanType(), name)
		require.Equal(t, want.host, vc.GetMatchTypedSubjectAltNames()[0].GetMatcher().GetExact(), name)
	}

	opts.ExtProc = "unix:/run/tollgate/extproc.sock"
	data, err = Bootstrap(opts)
	require.NoError(t, err)
	b = parseBootstrap(t, data)
	require.NotNil(t, clusterByName(t, b, XDSCluster).GetTransportSocket())
	require.Nil(t, clusterByName(t, b, ExtProcCluster).GetTransportSocket(), "a Unix socket stays plaintext")
}

// TestBootstrapQuotesStrings: node ids with YAML metacharacters stay one
// string.
func TestBootstrapQuotesStrings(t *testing.T) {
	id := `envoy: {"x": [1]} # not a comment`
	data, err := Bootstrap(BootstrapOptions{XDS: "127.0.0.1:18000", NodeID: id, NodeCluster: "a\nb"})
	require.NoError(t, err)
	b := parseBootstrap(t, data)
	require.Equal(t, id, b.GetNode().GetId())
	require.Equal(t, "a\nb", b.GetNode().GetCluster())
}

// TestDeployBootstrapIsCurrent keeps deploy/envoy/envoy.yaml equal to what
// `tollgate envoy bootstrap --xds tollgate:18000 --extproc tollgate:50051
// --node-id envoy-compose` prints.
func TestDeployBootstrapIsCurrent(t *testing.T) {
	got, err := Bootstrap(BootstrapOptions{NodeID: "envoy-compose", XDS: "tollgate:18000", ExtProc: "tollgate:50051"})
	require.NoError(t, err)
	parseBootstrap(t, got)
	path := filepath.Join("..", "deploy", "envoy", "envoy.yaml")
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./envoy -run TestDeployBootstrapIsCurrent -update")
	require.Equal(t, string(want), string(got))
}

func ExampleBootstrap() {
	out, err := Bootstrap(BootstrapOptions{XDS: "127.0.0.1:18000"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Contains(string(out), `cluster_name: "tollgate_xds"`))
	// Output: true
}
