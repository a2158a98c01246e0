package envoy

// BatchPaths are the data-plane paths of the batch endpoints (batch/,
// docs/batches.md): each path and every path under it goes to the gateway's
// service cluster (MCPCluster, the service that also serves /mcp), with
// ext_proc off, on routes named BatchRouteName + path.
var BatchPaths = []string{"/v1/files", "/v1/batches", "/v1/messages/batches"}

// BatchRouteName prefixes the names of the batch endpoints' routes.
const BatchRouteName = "tollgate_batches"
