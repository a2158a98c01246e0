// Package admin is Tollgate's gRPC admin API (tollgate.admin.v1): keys, users,
// teams, organizations, customers, providers, deployments, model groups,
// prices, spend reports, the audit log, admin credentials and declarative
// configuration (Apply). It owns access control (roles admin, team-admin and
// viewer, checked per RPC) and the interceptor chain (go-grpc-middleware v2:
// logging with slog, recovery, auth, validation).
//
// The admin port also speaks HTTP/1.1 (SplitPort tells a gRPC connection from
// an HTTP one by its first bytes): the REST/JSON API (RESTHandler, grpc-gateway
// generated under proto/gw, calling the gRPC server through a client
// connection so every call goes through the same interceptors), the OpenAPI
// document at /openapi.json and the web console under /ui/.
//
// It imports kernel, proto/ (adminv1), the store interfaces and entities (never
// a store backend) and internal/secret. It takes its store as the narrow
// interfaces it declares (Store for the Server, ConfigStore for Apply and
// Bootstrap): configuration, audit log and spend, never the ledger's writes. Every change it makes is a store write,
// which bumps the store revision; the gateway and xDS pick changes up from
// store.Config.Watch.
//
// Secrets: key secrets and admin secrets are returned once and stored as
// SHA-256 hashes; provider credentials are sealed with secret.Sealer
// (AES-256-GCM) before they are stored, and are never returned, logged or
// written to the audit log.
//
// Validation: the request messages have hand-written Validate() methods (in
// proto/tollgate/admin/v1/validate.go) run by the go-grpc-middleware validator
// interceptor; an invalid request gets InvalidArgument naming the field. The
// protovalidate rules could not be used because their .proto
// (buf/validate/validate.proto) is only distributed through the Buf Schema
// Registry, which the build machines cannot reach: the Go module
// buf.build/go/protovalidate in the module cache ships generated Go only, no
// .proto to import as a local buf module.
package admin
