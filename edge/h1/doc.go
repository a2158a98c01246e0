// Package h1 is the built-in data plane's HTTP/1.1 layer: the downstream
// server (Server: one goroutine per connection, the request head read by a
// field-list parser without a header map, the handler run in the
// connection's goroutine, the response written in one write) and the
// upstream client of the plain-text fast path (Client: a serialised request,
// one write, the response head parsed in the caller's goroutine, pooled
// connections).
//
// Framing follows Envoy's HTTP/1 codec (and RFC 9112) rather than net/http's
// leniency, because the edge is what single-machine users put on a network:
// every rule, with the Envoy setting or RFC section it follows, is in
// docs/dataplane.md and cited where it is enforced.
//
// Memory per connection is kept to what a connection in its state needs,
// because the data plane holds thousands at once (docs/operations.md, "CPU
// and memory tuning"): a connection waiting for its next request, or for
// the upstream once its request body was read, holds no read or write
// buffer (ready.go: it waits for input with MSG_PEEK, not a read); an
// upstream connection takes its read buffer at its response's first byte;
// a request still running after a second has its connection watched for
// the client going away by one epoll goroutine for the process (watch.go,
// watch_linux.go; a goroutine per request elsewhere).
//
// Under a burst of connections, the server's gate (gate.go) lets a few
// requests per core at a time run from their first byte until the handler
// lets their slot go (Response.LeaveGate), in arrival order.
//
// The exchange (edge) reaches what net/http's interfaces do not carry
// through *Response (the request's header fields in order, SetHeaders, the
// OnGone "client gone" hook, LeaveGate) and *Body (the upstream response's
// fields).
//
// It owns no gateway or Envoy logic: it must not import the edge, the ext_proc
// filter, the processor or anything else of Tollgate; stdlib and
// golang.org/x/net only.
package h1
