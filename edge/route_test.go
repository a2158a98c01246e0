package edge

import (
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
)

func strMatch(name string, sm *matcherv3.StringMatcher, invert bool) *routev3.HeaderMatcher {
	return &routev3.HeaderMatcher{Name: name, InvertMatch: invert, HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: sm}}
}

func clusterRoute(name string, m *routev3.RouteMatch) *routev3.Route {
	return &routev3.Route{Name: name, Match: m, Action: &routev3.Route_Route{Route: &routev3.RouteAction{
		ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: name},
	}}}
}

func TestRouteMatching(t *testing.T) {
	rc := &routev3.RouteConfiguration{Name: "r", VirtualHosts: []*routev3.VirtualHost{
		{Name: "exact", Domains: []string{"api.example.com"}, Routes: []*routev3.Route{
			clusterRoute("exact-host", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}),
		}},
		{Name: "suffix", Domains: []string{"*.example.com"}, Routes: []*routev3.Route{
			clusterRoute("suffix-host", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}),
		}},
		{Name: "any", Domains: []string{"*"}, Routes: []*routev3.Route{
			clusterRoute("path", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/v1/models"}}),
			clusterRoute("sep", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: "/v1/files"}}),
			clusterRoute("exact-hdr", &routev3.RouteMatch{
				PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
				Headers:       []*routev3.HeaderMatcher{strMatch("x-tollgate-route", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: "dep"}}, false)},
			}),
			clusterRoute("prefix-fold", &routev3.RouteMatch{
				PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
				Headers:       []*routev3.HeaderMatcher{strMatch("x-kind", &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Prefix{Prefix: "ab"}, IgnoreCase: true}, false)},
			}),
			clusterRoute("present-inverted", &routev3.RouteMatch{
				PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
				Headers:       []*routev3.HeaderMatcher{{Name: "x-skip", InvertMatch: true, HeaderMatchSpecifier: &routev3.HeaderMatcher_PresentMatch{PresentMatch: true}}},
			}),
			clusterRoute("last", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}}),
		}},
	}}
	lc := &listenerConf{bufferLimit: 1 << 20}
	rt, err := compileRoutes(rc, lc, nil)
	require.NoError(t, err)
	req := func(host, path string, kv ...string) extprocfilter.Headers {
		h := extprocfilter.Headers{{Key: ":authority", Value: host}, {Key: ":path", Value: path}, {Key: ":method", Value: "POST"}}
		for i := 0; i+1 < len(kv); i += 2 {
			h = append(h, extprocfilter.Header{Key: kv[i], Value: kv[i+1]})
		}
		return h
	}
	for _, tc := range []struct {
		h    extprocfilter.Headers
		want string
	}{
		{req("api.example.com", "/x"), "exact-host"},
		{req("API.example.com:8080", "/x"), "exact-host"},
		{req("eu.example.com", "/x"), "suffix-host"},
		{req("localhost:8080", "/v1/models?limit=1"), "path"},
		{req("localhost", "/v1/files/abc"), "sep"},
		{req("localhost", "/v1/files"), "sep"},
		{req("localhost", "/v1/filesx", "x-skip", "1"), "last"},
		{req("localhost", "/", "x-tollgate-route", "dep"), "exact-hdr"},
		{req("localhost", "/", "x-tollgate-route", "dep2", "x-kind", "ABC"), "prefix-fold"},
		{req("localhost", "/"), "present-inverted"},
		{req("localhost", "/", "x-skip", "yes"), "last"},
	} {
		r := rt.match(tc.h)
		require.NotNil(t, r, "%v", tc.h)
		require.Equal(t, tc.want, r.name, "%v", tc.h)
	}
}

func TestRouteBufferLimitsAndClients(t *testing.T) {
	direct := &routev3.Route{
		Name:  "nf",
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: 404, Body: &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "nf"}},
		}},
		RequestBodyBufferLimit: wrapperspb.UInt64(10),
	}
	rc := &routev3.RouteConfiguration{Name: "r", VirtualHosts: []*routev3.VirtualHost{{
		Name: "v", Domains: []string{"*"}, RequestBodyBufferLimit: wrapperspb.UInt64(20),
		Routes: []*routev3.Route{clusterRoute("a", &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: "/a"}}), direct},
	}}}
	cfg := extprocfilter.DefaultConfig()
	lc := &listenerConf{bufferLimit: 30, extProc: &cfg}
	var limits []int
	rt, err := compileRoutes(rc, lc, func(limit int) *extprocfilter.Client {
		limits = append(limits, limit)
		c := cfg
		c.RequestBufferLimit = limit
		return extprocfilter.NewClient(nil, c)
	})
	require.NoError(t, err)
	require.Equal(t, []int{20, 10}, limits, "route limit over vhost limit over listener limit")
	routes := rt.vhosts[0].routes
	require.Equal(t, 20, routes[0].filter.Config().RequestBufferLimit)
	require.Equal(t, 10, routes[1].filter.Config().RequestBufferLimit)
	require.Equal(t, &directResponse{status: 404, body: []byte("nf")}, routes[1].direct)
}

func TestCompileRejectsUnsupported(t *testing.T) {
	for name, r := range map[string]*routev3.Route{
		"regex path": {
			Name: "x", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: "/.*"}}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"}}},
		},
		"cluster_header": {
			Name: "x", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{ClusterSpecifier: &routev3.RouteAction_ClusterHeader{ClusterHeader: "x-c"}}},
		},
		"retry on 5xx": {
			Name: "x", Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
			Action: &routev3.Route_Route{Route: &routev3.RouteAction{
				ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: "c"},
				RetryPolicy:      &routev3.RetryPolicy{RetryOn: "5xx"},
			}},
		},
	} {
		_, err := compileRoute(r)
		require.Error(t, err, name)
	}
}
