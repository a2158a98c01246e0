package xds

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tollgate-ai/tollgate/envoy"
)

// HealthPaths are answered by the data plane itself with 200 "ok":
// /healthz and /readyz on the listener, without ext_proc (no key) and before
// any other route. On Envoy a served route means the listener has received
// its configuration over xDS; the processor's and control plane's own
// readiness (store, Redis, ledger) is their /readyz on the metrics port. The
// built-in data plane answers these paths with the gateway's readiness.
var HealthPaths = []string{"/healthz", "/readyz"}

// healthRoutes are the direct-response routes of HealthPaths.
func healthRoutes() []*routev3.Route {
	// Marshalling a generated message with its fields set cannot fail.
	off, _ := anypb.New(&extprocfilterv3.ExtProcPerRoute{
		Override: &extprocfilterv3.ExtProcPerRoute_Disabled{Disabled: true},
	})
	routes := make([]*routev3.Route, 0, len(HealthPaths))
	for _, p := range HealthPaths {
		routes = append(routes, &routev3.Route{
			Name:  "health" + strings.ReplaceAll(p, "/", "_"),
			Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Path{Path: p}},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
				Status: 200,
				Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: "ok\n"}},
			}},
			ResponseHeadersToAdd: []*corev3.HeaderValueOption{{
				Header:       &corev3.HeaderValue{Key: "content-type", Value: "text/plain; charset=utf-8"},
				AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
			}},
			TypedPerFilterConfig: map[string]*anypb.Any{envoy.ExtProcFilter: off},
		})
	}
	return routes
}
