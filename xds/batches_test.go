package xds

import (
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/envoy"
)

// The batch endpoints go to the gateway's service cluster, ext_proc off,
// before the catch-all; only when the gateway serves that cluster.
func TestBatchRoutes(t *testing.T) {
	in := &Input{ExtProc: Address{Host: "127.0.0.1", Port: 9002}, MCP: &Address{Host: "127.0.0.1", Port: 9003}}
	res, err := BuildResources(in) // validated by Envoy's own rules
	require.NoError(t, err)
	routes := res.Routes[0].(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes()
	byPath := map[string]*routev3.Route{}
	for i, r := range routes {
		if p := r.GetMatch().GetPathSeparatedPrefix(); p != "" && r.GetName() == envoy.BatchRouteName+p {
			byPath[p] = r
			require.Less(t, i, len(routes)-1, "before the catch-all")
		}
	}
	require.Len(t, byPath, len(envoy.BatchPaths))
	for _, p := range envoy.BatchPaths {
		r := byPath[p]
		require.NotNil(t, r, p)
		require.Equal(t, envoy.MCPCluster, r.GetRoute().GetCluster(), p)
		require.Contains(t, r.GetTypedPerFilterConfig(), envoy.ExtProcFilter, "ext_proc is off: the batch service authorizes and admits")
		require.Zero(t, r.GetRoute().GetTimeout().AsDuration(), "an upload or a file's content may be long")
	}

	none, err := BuildResources(&Input{ExtProc: Address{Host: "127.0.0.1", Port: 9002}})
	require.NoError(t, err)
	for _, r := range none.Routes[0].(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes() {
		require.NotContains(t, r.GetName(), envoy.BatchRouteName)
	}
}
