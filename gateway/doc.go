// Package gateway assembles a running Tollgate from a store: it builds
// immutable configuration snapshots from the store (rebuilt on every revision),
// serves them to the ext_proc processor (Catalog) and to the xDS server, admits
// and settles through the accountant of package accounting (adapted to
// extproc.Accountant in accounting.go), and runs the admin API, xDS, ext_proc
// and the built-in data plane together (Run).
//
// It may import every Tollgate package except cmd/ and bench/, and it takes
// stores as interfaces: concrete backends are chosen in cmd/.
package gateway
