// Package envoy holds what Tollgate shares with Envoy outside xDS: the names
// used by the xDS server, the Envoy bootstrap and the built-in data plane
// (names.go), and the bootstrap itself (Bootstrap), which points Envoy at the
// ADS server and binds its admin interface to loopback.
//
// It imports the standard library only: the bootstrap is rendered from a
// text template and validated against Envoy's protos in tests.
package envoy
