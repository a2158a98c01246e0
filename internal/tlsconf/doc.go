// Package tlsconf builds the TLS configurations of Tollgate's gRPC servers
// (admin API, xDS, ext_proc: always mutual TLS) and of their clients (the
// built-in data plane, the CLI) from PEM files. It imports the standard
// library only.
package tlsconf
