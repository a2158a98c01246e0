package envoy

// Names of the MCP gateway's route and cluster (xds/mcp.go).
const (
	// MCPPath is the data-plane path of the MCP gateway: /mcp and every path
	// under /mcp/.
	MCPPath = "/mcp"
	// MCPRouteName is the route of MCPPath.
	MCPRouteName = "tollgate_mcp"
	// MCPCluster is the cluster of the gateway's MCP service.
	MCPCluster = "tollgate_mcp"
)
