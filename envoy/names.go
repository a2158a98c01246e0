package envoy

// Names shared by the xDS server, the Envoy bootstrap and the built-in data plane.
const (
	// RouteHeader is set by the ext_proc processor to the chosen deployment id.
	RouteHeader = "x-tollgate-route"
	// ListenerName is the name of the gateway listener.
	ListenerName = "tollgate"
	// RouteConfigName is the name of the gateway route configuration.
	RouteConfigName = "tollgate"
	// ExtProcCluster is the cluster of the ext_proc processor.
	ExtProcCluster = "tollgate_extproc"
	// XDSCluster is the cluster of the ADS server, in the bootstrap.
	XDSCluster = "tollgate_xds"
	// ClusterPrefix prefixes deployment ids to make cluster names.
	ClusterPrefix = "deployment_"
)

// ClusterName is the cluster of a deployment.
func ClusterName(deploymentID string) string { return ClusterPrefix + deploymentID }
