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
// MCP service (Input.MCP), HTTP/1.1, with ext_proc off on the route. The
// MCP service is the same handler the built-in data plane calls in process
// (gateway/mcp.go): it authenticates the key, checks the tool grants,
// admits and settles each tools/call through the processor's accountant,
// so a second pass through ext_proc would only repeat it. No route timeout
// (a tool may run long); the route's idle timeout bounds stalls.

// mcpRoute is the route of envoy.MCPPath, before the catch-all.
func (b *builder) mcpRoute() *routev3.Route { return b.serviceRoute(envoy.MCPRouteName, envoy.MCPPath) }

// serviceRoute sends path and the paths under it to the gateway's service
// cluster (MCP, and the batch endpoints: batches.go), ext_proc off.
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
