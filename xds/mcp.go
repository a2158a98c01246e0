package xds

import (
	"fmt"
	"net/netip"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tollgate-ai/tollgate/envoy"
)

// The MCP gateway on Envoy: /mcp and the paths under it go to the gateway's
// MCP service (Input.MCP), HTTP/1.1. The MCP service is the same handler the
// built-in data plane calls in process (gateway/mcp.go): it authenticates
// the key, checks the tool grants, admits and settles each tools/call. The
// processor authorizes first, at the edge (mcp.EdgeAuthorizer through
// extproc.WithMCP), so that a request without a key, or a call the key's
// grants do not cover, is refused by Envoy and never reaches the service:
// ext_proc runs on the route's request headers only (MCPProcessingMode),
// and the processor asks for the body (mode_override, BUFFERED) only when
// the headers do not decide (2025-11-25 clients send no Mcp-Method). The
// response direction is off: replies (JSON or SSE) stream straight back.
// No route timeout (a tool may run long); the route's idle timeout bounds
// stalls.

// MCPProcessingMode is the /mcp route's ext_proc processing mode: the
// request headers, nothing else. A per-route mode replaces the whole
// filter-level one, so every field is set.
func MCPProcessingMode() *extprocfilterv3.ProcessingMode {
	return &extprocfilterv3.ProcessingMode{
		RequestHeaderMode:   extprocfilterv3.ProcessingMode_SEND,
		RequestBodyMode:     extprocfilterv3.ProcessingMode_NONE,
		RequestTrailerMode:  extprocfilterv3.ProcessingMode_SKIP,
		ResponseHeaderMode:  extprocfilterv3.ProcessingMode_SKIP,
		ResponseBodyMode:    extprocfilterv3.ProcessingMode_NONE,
		ResponseTrailerMode: extprocfilterv3.ProcessingMode_SKIP,
	}
}

// mcpRoute is the route of envoy.MCPPath, before the catch-all, ext_proc on
// its request headers (MCPProcessingMode).
func (b *builder) mcpRoute() *routev3.Route {
	r := b.serviceRoute(envoy.MCPRouteName, envoy.MCPPath)
	r.TypedPerFilterConfig = map[string]*anypb.Any{envoy.ExtProcFilter: b.any(&extprocfilterv3.ExtProcPerRoute{
		Override: &extprocfilterv3.ExtProcPerRoute_Overrides{Overrides: &extprocfilterv3.ExtProcOverrides{
			ProcessingMode: MCPProcessingMode(),
		}},
	})}
	return r
}

// serviceRoute sends path and the paths under it to the gateway's service
// cluster (the batch endpoints: batches.go; MCP, whose route then runs
// ext_proc on its headers), ext_proc off.
func (b *builder) serviceRoute(name, path string) *routev3.Route {
	off, _ := anypb.New(&extprocfilterv3.ExtProcPerRoute{
		Override: &extprocfilterv3.ExtProcPerRoute_Disabled{Disabled: true},
	})
	return &routev3.Route{
		Name:  name,
		Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_PathSeparatedPrefix{PathSeparatedPrefix: path}},
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: envoy.MCPCluster},
			Timeout:          durationpb.New(0),
			IdleTimeout:      durationpb.New(b.in.RouteIdleTimeout),
		}},
		TypedPerFilterConfig: map[string]*anypb.Any{envoy.ExtProcFilter: off},
	}
}

// mcpCluster is the gateway's MCP service.
func (b *builder) mcpCluster() *clusterv3.Cluster {
	a := b.in.MCP
	c := &clusterv3.Cluster{
		Name:            envoy.MCPCluster,
		ConnectTimeout:  durationpb.New(extProcConnectTime),
		LoadAssignment:  loadAssignment(envoy.MCPCluster, socketAddress(a.Host, a.Port)),
		CircuitBreakers: b.circuitBreakers(),
	}
	setDiscovery(c, a.Host)
	return c
}

// normalizeMCP checks Input.MCP and dials loopback for a listen-style
// address, as for ext_proc.
func normalizeMCP(a *Address) error {
	if a == nil {
		return nil
	}
	if a.Path != "" || a.Host == "" || !envoy.ValidHost(a.Host) || a.Port == 0 || a.Port > 65535 {
		return fmt.Errorf("%w: mcp: want a host and port, got %q", ErrInvalidInput, a.String())
	}
	if ip, err := netip.ParseAddr(a.Host); err == nil && ip.IsUnspecified() {
		a.Host = "127.0.0.1"
		if ip.Is6() {
			a.Host = "::1"
		}
	}
	return nil
}
