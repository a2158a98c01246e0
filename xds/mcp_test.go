package xds

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/tollgate-ai/tollgate/envoy"
)

func TestMCPRouteAndCluster(t *testing.T) {
	in := &Input{ExtProc: Address{Host: "127.0.0.1", Port: 9002}, MCP: &Address{Host: "0.0.0.0", Port: 9003}}
	res, err := BuildResources(in) // validated by Envoy's own rules
	require.NoError(t, err)
	require.Equal(t, "0.0.0.0", in.MCP.Host, "the input is not modified")

	rc := res.Routes[0].(*routev3.RouteConfiguration)
	routes := rc.GetVirtualHosts()[0].GetRoutes()
	var mcp *routev3.Route
	for i, r := range routes {
		if r.GetName() == envoy.MCPRouteName {
			mcp = r
			require.Less(t, i, len(routes)-1, "before the catch-all")
		}
	}
	require.NotNil(t, mcp)
	require.Equal(t, "/mcp", mcp.GetMatch().GetPathSeparatedPrefix())
	require.Equal(t, envoy.MCPCluster, mcp.GetRoute().GetCluster())
	var per extprocfilterv3.ExtProcPerRoute
	require.NoError(t, mcp.GetTypedPerFilterConfig()[envoy.ExtProcFilter].UnmarshalTo(&per))
	require.False(t, per.GetDisabled(), "the processor authorizes /mcp at the edge")
	require.True(t, proto.Equal(MCPProcessingMode(), per.GetOverrides().GetProcessingMode()), "request headers only: %v", per.GetOverrides())
	require.Equal(t, extprocfilterv3.ProcessingMode_SKIP, per.GetOverrides().GetProcessingMode().GetResponseHeaderMode(), "replies (SSE) bypass the processor")

	var cluster *clusterv3.Cluster
	for _, c := range res.Clusters {
		if c := c.(*clusterv3.Cluster); c.GetName() == envoy.MCPCluster {
			cluster = c
		}
	}
	require.NotNil(t, cluster)
	sa := cluster.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
	require.Equal(t, "127.0.0.1", sa.GetAddress(), "a listen address is dialled on loopback")
	require.Equal(t, uint32(9003), sa.GetPortValue())

	none, err := BuildResources(&Input{ExtProc: Address{Host: "127.0.0.1", Port: 9002}})
	require.NoError(t, err)
	require.Len(t, none.Clusters, 1, "no MCP service, no MCP cluster")

	_, err = BuildResources(&Input{ExtProc: Address{Host: "127.0.0.1", Port: 9002}, MCP: &Address{Host: "x"}})
	require.ErrorIs(t, err, ErrInvalidInput)
}
