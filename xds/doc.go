// Package xds turns the gateway's configuration into Envoy resources and
// serves them over xDS.
//
// Build (and BuildResources) translate an Input — the listener address, the
// ext_proc processor address, body and timeout limits, and one Upstream per
// provider deployment — into one Listener (HTTP connection manager with the
// ext_proc filter of the extproc spec §6, then the router), one
// RouteConfiguration (an exact match on envoy.RouteHeader per deployment, then
// a catch-all 404), one Cluster per deployment and the ext_proc Cluster.
// Every resource, and every typed config inside it, passes Envoy's
// protoc-gen-validate rules (ValidateAll) and the snapshot is consistent
// before anything is published.
//
// Server is a go-control-plane snapshot cache served over ADS (and the
// separate LDS/RDS/CDS/EDS services) in which every node gets the same
// snapshot, versioned by a content hash.
//
// It owns resource shapes and the xDS server; the names shared with the
// bootstrap and the built-in data plane are in package envoy. It imports
// go-control-plane, grpc, protobuf and envoy only — never store, extproc or
// kernel.
package xds
