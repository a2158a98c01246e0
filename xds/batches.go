package xds

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/tollgate-ai/tollgate/envoy"
)

// The batch endpoints on Envoy (docs/batches.md): /v1/files, /v1/batches
// and /v1/messages/batches, and the paths under them, go to the gateway's
// service cluster (the one of /mcp), whose batch service authenticates the
// key, admits a batch's worst case through the accountant, talks to the
// provider and records the batch for the poller. ext_proc is off on these
// routes, as on /mcp: the service is the authorizer, and a multipart upload
// or a file's content passes unbuffered. No route timeout (an upload or a
// file's content may be large); the route's idle timeout bounds stalls.

// batchRoutes are the routes of envoy.BatchPaths, before the catch-all.
func (b *builder) batchRoutes() []*routev3.Route {
	out := make([]*routev3.Route, 0, len(envoy.BatchPaths))
	for _, p := range envoy.BatchPaths {
		out = append(out, b.serviceRoute(envoy.BatchRouteName+p, p))
	}
	return out
}
