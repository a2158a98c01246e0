// Package cli is the `tollgate` command line for the admin API: keys, teams,
// users, organizations, customers, providers, deployments, model groups,
// prices, spend reports, the audit log, admin credentials and `apply -f`.
// Main runs one command line (without the program name); Usage prints the
// command list. Output is an aligned table by default and JSON with `-o json`;
// money is shown and entered in dollars and sent exactly (nano-USD).
//
// It imports proto/ (adminv1), grpc and protobuf, and yaml.v3 for `apply`;
// never admin/, kernel or a store: it only speaks the API.
package cli
