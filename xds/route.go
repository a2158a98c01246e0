package xds

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/routing"
)

// NotFoundBody is the body of the catch-all route's 404: an OpenAI-style
// error. The processor normally answers first; this is what a request that
// the processor let through without choosing a deployment gets.
const NotFoundBody = `{"error":{"message":"no deployment serves this request","type":"invalid_request_error","param":null,"code":"route_not_found"}}`

// retryOn are the failures retried before any response byte reaches
// ext_proc or the client.
const retryOn = "connect-failure,refused-stream"

// routeConfiguration builds envoy.RouteConfigName: one virtual host, the
// health routes (health.go), one route per upstream on the exact envoy.RouteHeader value, then the
// catch-all 404.
func (b *builder) routeConfiguration() *routev3.RouteConfiguration {
	in := b.in
	limit := wrapperspb.UInt64(uint64(in.MaxRequestBodyBytes))
	routes := make([]*routev3.Route, 0, len(in.Upstreams)+len(HealthPaths)+1)
	routes = append(routes, healthRoutes()...)
	if in.MCP != nil {
		routes = append(routes, b.mcpRoute())
		routes = append(routes, b.batchRoutes()...)
	}
	byDep := make(map[string]Upstream, len(in.Upstreams))
	for _, u := range in.Upstreams {
		routes = append(routes, b.upstreamRoute(u, limit))
		byDep[u.Deployment] = u
	}
	for _, r := range b.tries {
		routes = append(routes, b.tryRouteConfig(r, byDep[r.deps[0]], limit))
	}
	routes = append(routes, &routev3.Route{
		Name:  envoy.NotFoundRouteName,
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
		// ext_proc is not disabled here: this is the route every request
		// matches first, before the processor sets the routing header (R3.3).
		Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
			Status: 404,
			Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: NotFoundBody}},
		}},
		ResponseHeadersToAdd: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "content-type", Value: "application/json"},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}},
		RequestBodyBufferLimit: limit,
	})
	return &routev3.RouteConfiguration{
		Name: envoy.RouteConfigName,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:                   envoy.VirtualHostName,
			Domains:                []string{"*"},
			Routes:                 routes,
			RequestBodyBufferLimit: limit,
			// Each try's request says its number (per-try routes).
			IncludeRequestAttemptCount: len(b.tries) > 0,
		}},
	}
}

func (b *builder) upstreamRoute(u Upstream, limit *wrapperspb.UInt64Value) *routev3.Route {
	in := b.in
	retry := &routev3.RetryPolicy{
		RetryOn:           retryOn,
		NumRetries:        wrapperspb.UInt32(in.NumRetries),
		PerTryIdleTimeout: durationpb.New(in.PerTryIdleTimeout),
	}
	// Envoy's per-try timeout runs until the upstream response starts: the
	// deployment's first-byte timeout. Its timeout is the route's, which
	// bounds the whole request (0: none, as long streams need).
	if t := routing.TryTimeout(u.FirstByteTimeout, in.PerTryTimeout); t > 0 {
		retry.PerTryTimeout = durationpb.New(t)
	}
	return &routev3.Route{
		Name:  envoy.ClusterName(u.Deployment),
		Match: routeHeaderMatch(u.Deployment),
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: envoy.ClusterName(u.Deployment)},
			HostRewriteSpecifier: &routev3.RouteAction_HostRewriteLiteral{
				HostRewriteLiteral: hostHeader(u),
			},
			// The deployment's timeout, else 0s, which turns the route
			// timeout off: it runs to the end of the response and would
			// cut long streams (spec §7).
			Timeout:     durationpb.New(u.Timeout),
			IdleTimeout: durationpb.New(in.RouteIdleTimeout),
			RetryPolicy: retry,
		}},
		RequestBodyBufferLimit: limit,
	}
}

// hostHeader is the Host the provider expects: the host, with the port when
// it is not the scheme's default.
func hostHeader(u Upstream) string {
	if (u.Scheme == "https" && u.Port == 443) || (u.Scheme == "http" && u.Port == 80) {
		return u.Host
	}
	return (Address{Host: u.Host, Port: u.Port}).hostPort()
}

// routeHeaderMatch matches every path whose envoy.RouteHeader is value.
func routeHeaderMatch(value string) *routev3.RouteMatch {
	return &routev3.RouteMatch{
		PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"},
		Headers: []*routev3.HeaderMatcher{{
			Name: envoy.RouteHeader,
			HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: &matcherv3.StringMatcher{
				MatchPattern: &matcherv3.StringMatcher_Exact{Exact: value},
			}},
		}},
	}
}
