// Package edge is Tollgate's built-in data plane: a small HTTP/1.1 and h2c
// server that plays Envoy's part for exactly the subset of Envoy configuration
// Tollgate's xDS server emits, for machines without Envoy.
//
// It learns its listener, routes and clusters over ADS (one aggregated stream,
// state of the world, ACK/NACK like Envoy) and applies each accepted update
// atomically: a request sees one configuration from start to end. Per request
// it drives the ext_proc processor through the Envoy-faithful client of
// edge/extprocfilter (one Process stream per request, with the filter settings
// the listener's ext_proc filter carries), routes on the headers the processor
// released (matching again after clear_route_cache), and forwards upstream
// over pooled connections per cluster (TLS with SNI and the configured trust
// and SAN checks, HTTP/2 where configured or negotiated). Response bodies are
// passed on chunk by chunk with a flush per chunk and no added buffering.
//
// What it reproduces, by Envoy config field:
//
//   - Listener: the socket address (or WithListenOverride) and
//     per_connection_buffer_limit_bytes (the ext_proc buffer limits: 413 on
//     requests, 500 on BUFFERED responses). The HCM: RDS over ADS or an inline
//     route_config, stream_idle_timeout (also while the request body is
//     read: 408), max_request_headers_kb,
//     common_http_protocol_options.max_headers_count, and the http_filters
//     ext_proc (processing_mode, message_timeout, max_message_timeout,
//     allow_mode_override, allowed_override_modes, failure_mode_allow,
//     status_on_error, route_cache_action/disable_clear_route_cache,
//     mutation_rules, allow_content_length_header) and router. Any other HTTP
//     filter is rejected (NACK) unless it is optional.
//   - Routes: virtual hosts by domain ("*", exact, "*.suffix", "prefix*"),
//     prefix/path/path_separated_prefix matches with header matchers
//     (string_match exact/prefix/suffix/contains, present_match,
//     invert_match), request_body_buffer_limit (route, then vhost, then the
//     listener's limit), route actions to a cluster with host_rewrite_literal,
//     timeout (504 before response headers, a reset after), idle_timeout
//     (408 before response headers, a reset after; the HCM stream idle timeout
//     when unset), retry_policy num_retries on connect-failure,
//     per_try_timeout and per_try_idle_timeout (both bound the time to response
//     headers: 504), internal_redirect_policy without predicates
//     (redirect.go), and direct_response with response_headers_to_add.
//   - Clusters: STATIC, STRICT_DNS and LOGICAL_DNS load assignments (round
//     robin over the endpoints; DNS is resolved at connect time),
//     connect_timeout, TCP keepalive, circuit breaker max_requests (503 on
//     overflow) and max_connections, the TLS transport socket (sni, trusted_ca
//     and match_typed_subject_alt_names; without a validation context the
//     certificate is not checked, as in Envoy; when the trusted_ca file is
//     envoy.SystemCABundle and missing, the system roots are used), and
//     HttpProtocolOptions:
//     explicit HTTP/1.1, explicit HTTP/2 (h2c on plain TCP) or auto_config
//     (ALPN over TLS), with HTTP/2 keepalive PINGs.
//
// Local replies produced by the router (the catch-all direct_response, no
// route, unknown cluster, upstream connect failures and timeouts) go through
// the response direction of the ext_proc filter, as Envoy 1.37+ does (spec
// N4.5), so the processor can translate and settle them; local replies of the
// ext_proc filter itself (413, status_on_error, message timeouts, immediate
// responses) go straight to the client.
//
// Per request, Envoy's HCM additions are made before the filter sees the
// headers: :authority, :path, :method, :scheme, x-forwarded-proto and a
// generated x-request-id (kept when the client sent one); hop-by-hop headers
// are dropped. Bodies are read with a 4 KiB buffer that grows to 32 KiB once a
// read fills it, each read becoming one chunk, so idle streams hold little
// memory.
//
// The HTTP layer is lean on purpose, because on a small machine it is most
// of a request's cost. HTTP/1.x downstream connections are served by the
// edge's own loop (package edge/h1, framed as Envoy frames: docs/dataplane.md;
// its head parser has no header map) reads each request head,
// the fields reach the filter in order with lower-case names, and the
// handler runs in the connection's goroutine; responses go out with
// lower-case names in the filter's order; a response the handler
// completes is written with its Content-Length in one write, a flushed one
// is chunked. A request still running after 1 s, its body read, has its
// connection watched so that a client going away cancels it (net/http
// spends a goroutine and a read on every request for this). Connections
// opening with the HTTP/2 preface are handed to a net/http server (h2c).
// Upstream, a request whose body the filter released whole goes to a
// plain-text HTTP/1.1 cluster through h1.Client: serialised into one
// buffer, one write, the response head parsed by h1's parser in the
// caller's goroutine, stale
// pooled connections retried once; streamed bodies, TLS and HTTP/2 go
// through http.Transport.
//
// Lifecycle: New, then RunADS (one call; it returns when its context ends,
// while the listener keeps serving), Ready/Addr once serving, Shutdown to
// drain. Ready never closes if no complete configuration arrives, so wait on
// it together with a context.
//
// Not modelled: listener address changes after the first bind (they need a
// restart), EDS, request trailers upstream, upgrades (WebSocket), access
// logs, tracing, stats, and the ext_proc grpc_service: the processor is the
// extprocfilter.Transport given to New, in-process (extprocfilter.Sync) or
// over gRPC (extprocfilter.GRPC).
//
// The edge holds no gateway logic. It must not import extproc (the
// processor), kernel, store, admin or gateway; only the Envoy protos, gRPC,
// go-control-plane, envoy/ and edge/extprocfilter.
package edge
