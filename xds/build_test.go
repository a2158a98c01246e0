package xds

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/testing/protocmp"
	"gopkg.in/yaml.v3"

	"github.com/tollgate-ai/tollgate/envoy"
)

var update = flag.Bool("update", false, "rewrite testdata/out from testdata/in")

func readInput(t *testing.T, path string) *Input {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var in Input
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	require.NoError(t, dec.Decode(&in), path)
	return &in
}

// toYAML renders resources as YAML, through protojson (proto field names),
// so field names and Any types read like Envoy's own YAML config.
func toYAML(t *testing.T, version string, res *Resources) []byte {
	t.Helper()
	section := func(rs []types.Resource) *yaml.Node {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, r := range rs {
			js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(r)
			require.NoError(t, err)
			var doc yaml.Node // JSON is YAML; a node keeps the key order
			require.NoError(t, yaml.Unmarshal(js, &doc))
			seq.Content = append(seq.Content, blockStyle(doc.Content[0]))
		}
		return seq
	}
	key := func(k string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: k} }
	doc := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
		key("version"), key(version),
		key("listeners"), section(res.Listeners),
		key("routes"), section(res.Routes),
		key("clusters"), section(res.Clusters),
	}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	require.NoError(t, enc.Encode(doc))
	require.NoError(t, enc.Close())
	return buf.Bytes()
}

// blockStyle drops the JSON flow and quoting styles.
func blockStyle(n *yaml.Node) *yaml.Node {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
	return n
}

func TestBuildGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/in/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, path := range inputs {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			in := readInput(t, path)
			res, err := BuildResources(in)
			require.NoError(t, err)
			version, err := res.Hash()
			require.NoError(t, err)

			// Every resource passes Envoy's validation and the snapshot
			// is consistent (Build checks both; check them here too).
			for _, r := range res.all() {
				require.NoError(t, r.(validator).ValidateAll())
			}
			snap, err := Build(in, "")
			require.NoError(t, err)
			require.NoError(t, snap.Consistent())
			require.Equal(t, version, snap.GetVersion(resource.ClusterType))

			got := toYAML(t, version, res)
			out := filepath.Join("testdata", "out", name+".yaml")
			if *update {
				require.NoError(t, os.WriteFile(out, got, 0o644))
			}
			want, err := os.ReadFile(out)
			require.NoError(t, err, "run go test ./xds -run TestBuildGolden -update")
			require.Equal(t, string(want), string(got))
		})
	}
}

// hcmOf unpacks the HTTP connection manager of the listener.
func hcmOf(t *testing.T, l *listenerv3.Listener) *hcmv3.HttpConnectionManager {
	t.Helper()
	require.Len(t, l.GetFilterChains(), 1)
	require.Len(t, l.GetFilterChains()[0].GetFilters(), 1)
	var hcm hcmv3.HttpConnectionManager
	require.NoError(t, l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm))
	return &hcm
}

// TestExtProcFilterMatchesSpec pins the filter to spec §6 field by field.
func TestExtProcFilterMatchesSpec(t *testing.T) {
	res, err := BuildResources(&Input{ExtProc: Address{Host: "127.0.0.1", Port: 9002}})
	require.NoError(t, err)
	hcm := hcmOf(t, res.Listeners[0].(*listenerv3.Listener))
	require.Len(t, hcm.GetHttpFilters(), 2)
	require.Equal(t, envoy.ExtProcFilter, hcm.GetHttpFilters()[0].GetName())
	require.Equal(t, envoy.RouterFilter, hcm.GetHttpFilters()[1].GetName())

	var got extprocfilterv3.ExternalProcessor
	require.NoError(t, hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&got))
	var want extprocfilterv3.ExternalProcessor
	require.NoError(t, protojson.Unmarshal([]byte(`{
		"grpcService": {"envoyGrpc": {"clusterName": "tollgate_extproc"}},
		"failureModeAllow": false,
		"processingMode": {
			"requestHeaderMode": "SEND", "requestBodyMode": "BUFFERED", "requestTrailerMode": "SKIP",
			"responseHeaderMode": "SEND", "responseBodyMode": "BUFFERED", "responseTrailerMode": "SEND"
		},
		"allowModeOverride": true,
		"messageTimeout": "5s",
		"maxMessageTimeout": "60s",
		"routeCacheAction": "DEFAULT",
		"mutationRules": {"disallowIsError": true},
		"metadataOptions": {"receivingNamespaces": {"untyped": ["tollgate"]}},
		"requestAttributes": ["xds.route_name"],
		"statPrefix": "tollgate"
	}`), &want))
	require.Empty(t, cmp.Diff(&want, &got, protocmp.Transform()))
}

func TestRoutesAndClusters(t *testing.T) {
	in := &Input{
		ExtProc:             Address{Path: "/run/tollgate/extproc.sock"},
		MaxRequestBodyBytes: 1 << 20,
		Upstreams: []Upstream{
			{Deployment: "a", Scheme: "https", Host: "api.example.com", HTTP2: true},
			{Deployment: "b", Scheme: "http", Host: "127.0.0.1", Port: 8000},
		},
	}
	res, err := BuildResources(in)
	require.NoError(t, err)

	l := res.Listeners[0].(*listenerv3.Listener)
	require.Equal(t, uint32(1<<20), l.GetPerConnectionBufferLimitBytes().GetValue())
	hcm := hcmOf(t, l)
	require.Equal(t, envoy.RouteConfigName, hcm.GetRds().GetRouteConfigName())
	require.NotNil(t, hcm.GetRds().GetConfigSource().GetAds())
	require.Equal(t, hcmv3.HttpConnectionManager_AUTO, hcm.GetCodecType())

	rc := res.Routes[0].(*routev3.RouteConfiguration)
	require.Equal(t, envoy.RouteConfigName, rc.GetName())
	require.Len(t, rc.GetVirtualHosts(), 1)
	vh := rc.GetVirtualHosts()[0]
	require.Equal(t, []string{"*"}, vh.GetDomains())
	routes := vh.GetRoutes()
	require.Len(t, routes, 5)
	for i, p := range HealthPaths {
		require.Equal(t, p, routes[i].GetMatch().GetPath())
		require.Equal(t, uint32(200), routes[i].GetDirectResponse().GetStatus())
		require.Contains(t, routes[i].GetTypedPerFilterConfig(), envoy.ExtProcFilter, "no key needed for health")
	}
	routes = routes[len(HealthPaths):]
	for i, tc := range []struct {
		id, cluster, host string
	}{
		{"a", "deployment_a", "api.example.com"},
		{"b", "deployment_b", "127.0.0.1:8000"},
	} {
		r := routes[i]
		require.Equal(t, "/", r.GetMatch().GetPrefix())
		require.Len(t, r.GetMatch().GetHeaders(), 1)
		require.Equal(t, envoy.RouteHeader, r.GetMatch().GetHeaders()[0].GetName())
		require.Equal(t, tc.id, r.GetMatch().GetHeaders()[0].GetStringMatch().GetExact())
		require.Equal(t, tc.cluster, r.GetRoute().GetCluster())
		require.Equal(t, tc.host, r.GetRoute().GetHostRewriteLiteral())
		require.Zero(t, r.GetRoute().GetTimeout().AsDuration())
		require.NotNil(t, r.GetRoute().GetTimeout(), "timeout must be explicit 0s")
		require.Equal(t, 300*time.Second, r.GetRoute().GetIdleTimeout().AsDuration())
		require.Equal(t, "connect-failure,refused-stream", r.GetRoute().GetRetryPolicy().GetRetryOn())
		require.Equal(t, uint64(1<<20), r.GetRequestBodyBufferLimit().GetValue())
	}
	last := routes[2]
	require.Equal(t, envoy.NotFoundRouteName, last.GetName())
	require.Empty(t, last.GetMatch().GetHeaders())
	require.Equal(t, uint32(404), last.GetDirectResponse().GetStatus())
	require.JSONEq(t, NotFoundBody, last.GetDirectResponse().GetBody().GetInlineString())
	require.Empty(t, last.GetTypedPerFilterConfig(), "ext_proc must stay enabled on the catch-all")

	require.Len(t, res.Clusters, 3)
	a := res.Clusters[0].(*clusterv3.Cluster)
	require.Equal(t, "deployment_a", a.GetName())
	require.Equal(t, clusterv3.Cluster_STRICT_DNS, a.GetType())
	require.Equal(t, uint32(DefaultCircuitBreakerMax), a.GetCircuitBreakers().GetThresholds()[0].GetMaxRequests().GetValue())
	var tlsCtx tlsv3.UpstreamTlsContext
	require.NoError(t, a.GetTransportSocket().GetTypedConfig().UnmarshalTo(&tlsCtx))
	require.Equal(t, "api.example.com", tlsCtx.GetSni())
	vc := tlsCtx.GetCommonTlsContext().GetValidationContext()
	require.Equal(t, envoy.SystemCABundle, vc.GetTrustedCa().GetFilename())
	require.Equal(t, "api.example.com", vc.GetMatchTypedSubjectAltNames()[0].GetMatcher().GetExact())
	var aOpts httpv3.HttpProtocolOptions
	require.NoError(t, a.GetTypedExtensionProtocolOptions()[httpOptionsKey].UnmarshalTo(&aOpts))
	require.NotNil(t, aOpts.GetAutoConfig().GetHttp2ProtocolOptions())

	b := res.Clusters[1].(*clusterv3.Cluster)
	require.Equal(t, clusterv3.Cluster_STATIC, b.GetType())
	require.Nil(t, b.GetTransportSocket())
	var bOpts httpv3.HttpProtocolOptions
	require.NoError(t, b.GetTypedExtensionProtocolOptions()[httpOptionsKey].UnmarshalTo(&bOpts))
	require.NotNil(t, bOpts.GetExplicitHttpConfig().GetHttpProtocolOptions())

	ep := res.Clusters[2].(*clusterv3.Cluster)
	require.Equal(t, envoy.ExtProcCluster, ep.GetName())
	require.Equal(t, clusterv3.Cluster_STATIC, ep.GetType())
	require.Equal(t, "/run/tollgate/extproc.sock",
		ep.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetPipe().GetPath())
	require.Equal(t, uint32(ExtProcBufferLimitBytes), ep.GetPerConnectionBufferLimitBytes().GetValue())
	var epOpts httpv3.HttpProtocolOptions
	require.NoError(t, ep.GetTypedExtensionProtocolOptions()[httpOptionsKey].UnmarshalTo(&epOpts))
	require.NotNil(t, epOpts.GetExplicitHttpConfig().GetHttp2ProtocolOptions().GetConnectionKeepalive())
}

func TestBuildRejectsInvalidInput(t *testing.T) {
	ok := func() *Input {
		return &Input{
			ExtProc:   Address{Host: "127.0.0.1", Port: 9002},
			Upstreams: []Upstream{{Deployment: "d1", Scheme: "https", Host: "api.example.com"}},
		}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Input)
		want   string
	}{
		{"no ext_proc", func(in *Input) { in.ExtProc = Address{} }, "ext_proc address is missing"},
		{"ext_proc path and host", func(in *Input) { in.ExtProc.Path = "/x.sock" }, "either path or host"},
		{"ext_proc relative path", func(in *Input) { in.ExtProc = Address{Path: "x.sock"} }, "must be absolute"},
		{"listener hostname", func(in *Input) { in.Listener.Host = "gateway.internal" }, "must be an IP address"},
		{"listener unix", func(in *Input) { in.Listener.Path = "/x.sock" }, "Unix sockets"},
		{"body limit too big", func(in *Input) { in.MaxRequestBodyBytes = 1 << 32 }, "max_request_body_bytes"},
		{"negative timeout", func(in *Input) { in.RouteIdleTimeout = -time.Second }, "route_idle_timeout"},
		{"max below message", func(in *Input) { in.MessageTimeout = time.Minute; in.MaxMessageTimeout = time.Second }, "below message_timeout"},
		{"message timeout over 1h", func(in *Input) { in.MessageTimeout = 2 * time.Hour; in.MaxMessageTimeout = 3 * time.Hour }, "at most 1h"},
		{"empty deployment", func(in *Input) { in.Upstreams[0].Deployment = "" }, "deployment id"},
		{"deployment with space", func(in *Input) { in.Upstreams[0].Deployment = "a b" }, "deployment id"},
		{"duplicate deployment", func(in *Input) { in.Upstreams = append(in.Upstreams, in.Upstreams[0]) }, "listed twice"},
		{"bad scheme", func(in *Input) { in.Upstreams[0].Scheme = "ftp" }, "not http or https"},
		{"bad host", func(in *Input) { in.Upstreams[0].Host = "api example.com" }, "not a hostname"},
		{"bad port", func(in *Input) { in.Upstreams[0].Port = 70000 }, "out of range"},
		{"sni is an ip", func(in *Input) { in.Upstreams[0].SNI = "10.0.0.1" }, "not a DNS name"},
		{"sni not utf-8", func(in *Input) { in.Upstreams[0].SNI = "\xf7" }, "not a DNS name"},
		{"ext_proc path not utf-8", func(in *Input) { in.ExtProc = Address{Path: "/\xf7"} }, "not a usable socket path"},
		{"ext_proc path too long", func(in *Input) { in.ExtProc = Address{Path: "/" + strings.Repeat("x", 107)} }, "not a usable socket path"},
		{"sni on http", func(in *Input) { in.Upstreams[0].Scheme = "http"; in.Upstreams[0].SNI = "x" }, "sni set on an http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ok()
			tc.mutate(in)
			_, err := Build(in, "v1")
			require.ErrorIs(t, err, ErrInvalidInput)
			require.ErrorContains(t, err, tc.want)
		})
	}
	t.Run("nil", func(t *testing.T) {
		_, err := Build(nil, "v1")
		require.ErrorIs(t, err, ErrInvalidInput)
	})
	t.Run("valid", func(t *testing.T) {
		snap, err := Build(ok(), "v1")
		require.NoError(t, err)
		require.Equal(t, "v1", snap.GetVersion(resource.RouteType))
	})
}

func TestBuildDoesNotModifyInput(t *testing.T) {
	in := &Input{
		ExtProc:   Address{Host: "127.0.0.1", Port: 9002},
		Upstreams: []Upstream{{Deployment: "d1", Scheme: "HTTPS", Host: "api.example.com"}},
	}
	before := *in
	before.Upstreams = append([]Upstream(nil), in.Upstreams...)
	_, err := Build(in, "")
	require.NoError(t, err)
	require.Equal(t, before, *in)
}

func TestBuildNormalizesAddresses(t *testing.T) {
	for _, tc := range []struct {
		name                string
		listener, extProc   Address
		wantListen, wantExt string
	}{
		{"localhost listener", Address{Host: "localhost", Port: 8080}, Address{Host: "127.0.0.1", Port: 1}, "127.0.0.1", "127.0.0.1"},
		{"unspecified v4 ext_proc", Address{}, Address{Host: "0.0.0.0", Port: 1}, "0.0.0.0", "127.0.0.1"},
		{"unspecified v6 ext_proc", Address{}, Address{Host: "::", Port: 1}, "0.0.0.0", "::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := BuildResources(&Input{Listener: tc.listener, ExtProc: tc.extProc})
			require.NoError(t, err)
			l := res.Listeners[0].(*listenerv3.Listener)
			require.Equal(t, tc.wantListen, l.GetAddress().GetSocketAddress().GetAddress())
			ep := res.Clusters[len(res.Clusters)-1].(*clusterv3.Cluster)
			require.Equal(t, tc.wantExt,
				ep.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress().GetAddress())
		})
	}
}

func TestVersionIsContentHash(t *testing.T) {
	in := &Input{
		ExtProc:   Address{Host: "127.0.0.1", Port: 9002},
		Upstreams: []Upstream{{Deployment: "d1", Scheme: "https", Host: "api.example.com"}},
	}
	a, err := Build(in, "")
	require.NoError(t, err)
	b, err := Build(in, "")
	require.NoError(t, err)
	require.Equal(t, a.GetVersion(resource.ListenerType), b.GetVersion(resource.ListenerType))

	in.Upstreams[0].Host = "api2.example.com"
	c, err := Build(in, "")
	require.NoError(t, err)
	require.NotEqual(t, a.GetVersion(resource.ListenerType), c.GetVersion(resource.ListenerType))
	require.Len(t, c.GetVersion(resource.ListenerType), 16)
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Address
		wantErr string
	}{
		{in: "127.0.0.1:9002", want: Address{Host: "127.0.0.1", Port: 9002}},
		{in: "[::1]:9002", want: Address{Host: "::1", Port: 9002}},
		{in: "extproc.internal:9002", want: Address{Host: "extproc.internal", Port: 9002}},
		{in: "unix:/run/tollgate/extproc.sock", want: Address{Path: "/run/tollgate/extproc.sock"}},
		{in: "unix:///run/tollgate/extproc.sock", want: Address{Path: "/run/tollgate/extproc.sock"}},
		{in: "unix:@tollgate", want: Address{Path: "@tollgate"}},
		{in: "/run/x.sock", want: Address{Path: "/run/x.sock"}},
		{in: "unix:run/x.sock", wantErr: "must be absolute"},
		{in: "127.0.0.1", wantErr: "missing port"},
		{in: "127.0.0.1:0", wantErr: "bad port"},
		{in: "127.0.0.1:65536", wantErr: "bad port"},
		{in: ":9002", wantErr: "bad host"},
		{in: "bad host:9002", wantErr: "bad host"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAddress(tc.in)
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidInput)
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestUpstreamTLSNames(t *testing.T) {
	for _, tc := range []struct {
		name     string
		u        Upstream
		wantSNI  string
		wantSAN  string
		wantType tlsv3.SubjectAltNameMatcher_SanType
	}{
		{"hostname", Upstream{Host: "api.example.com"}, "api.example.com", "api.example.com", tlsv3.SubjectAltNameMatcher_DNS},
		{"hostname with sni", Upstream{Host: "gw.example.com", SNI: "api.example.com"}, "api.example.com", "api.example.com", tlsv3.SubjectAltNameMatcher_DNS},
		{"ip", Upstream{Host: "10.1.2.3"}, "", "10.1.2.3", tlsv3.SubjectAltNameMatcher_IP_ADDRESS},
		{"ip with sni", Upstream{Host: "10.1.2.3", SNI: "llm.internal"}, "llm.internal", "llm.internal", tlsv3.SubjectAltNameMatcher_DNS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.u.Deployment, tc.u.Scheme = "d", "https"
			res, err := BuildResources(&Input{ExtProc: Address{Host: "127.0.0.1", Port: 1}, Upstreams: []Upstream{tc.u}})
			require.NoError(t, err)
			var tlsCtx tlsv3.UpstreamTlsContext
			require.NoError(t, res.Clusters[0].(*clusterv3.Cluster).GetTransportSocket().GetTypedConfig().UnmarshalTo(&tlsCtx))
			require.Equal(t, tc.wantSNI, tlsCtx.GetSni())
			sans := tlsCtx.GetCommonTlsContext().GetValidationContext().GetMatchTypedSubjectAltNames()
			require.Len(t, sans, 1)
			require.Equal(t, tc.wantType, sans[0].GetSanType())
			require.Equal(t, tc.wantSAN, sans[0].GetMatcher().GetExact())
		})
	}
}
