package envoy

// Names shared by the xDS server, the Envoy bootstrap and the built-in data plane.
const (
	// RouteHeader is set by the ext_proc processor to the chosen deployment id.
	RouteHeader = "x-tollgate-route"
	// RetryHeader, on a failed attempt's response, is the processor's retry
	// token: the data plane drops that response and sends the request again
	// with the token as a request header (docs/envoy.md, "Retries").
	RetryHeader = "x-tollgate-retry"
	// RetryDelayHeader is the wait before that retry, in milliseconds.
	RetryDelayHeader = "x-tollgate-retry-delay"
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

// Names added with the xDS server (issue 6).
const (
	// VirtualHostName is the only virtual host of RouteConfigName.
	VirtualHostName = "tollgate"
	// NotFoundRouteName is the catch-all route, last in the virtual host: it
	// keeps ext_proc enabled and answers 404 once processing is done.
	NotFoundRouteName = "tollgate_not_found"
	// MetadataNamespace is the dynamic metadata namespace the ext_proc filter
	// accepts from the processor (metadata_options.receiving_namespaces).
	MetadataNamespace = "tollgate"
	// StatPrefix prefixes the HTTP connection manager and ext_proc statistics.
	StatPrefix = "tollgate"
	// ExtProcFilter is the name of the ext_proc HTTP filter.
	ExtProcFilter = "envoy.filters.http.ext_proc"
	// RouterFilter is the name of the router HTTP filter, last in the chain.
	RouterFilter = "envoy.filters.http.router"
	// SystemCABundle is the CA bundle upstream TLS is validated against.
	SystemCABundle = "/etc/ssl/certs/ca-certificates.crt"
	// ExtProcBufferLimitBytes is the per-connection buffer limit of the
	// ext_proc cluster: BUFFERED bodies travel to the processor in one gRPC
	// message (extproc spec G1; Envoy AI Gateway uses the same value).
	ExtProcBufferLimitBytes = 50 << 20
	// DefaultCircuitBreakerMax replaces Envoy's default circuit-breaker limit
	// of 1024 on every cluster Tollgate defines (extproc spec G3).
	DefaultCircuitBreakerMax = 100000
)
