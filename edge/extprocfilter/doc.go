// Package extprocfilter is Envoy's side of the ext_proc protocol, written in
// Go: the HTTP filter envoy.filters.http.ext_proc of one data plane, driving
// an envoy.service.ext_proc.v3.ExternalProcessor/Process server the way
// Envoy does.
//
// It owns the message order per processing mode, held headers, buffered and
// streamed bodies, mode_override, the checks Envoy applies to replies (spurious
// replies, header mutation rules, content-length, message timeouts, immediate
// responses) and Envoy's failure semantics. The rules it implements are
// written down in docs/extproc.md (R1–R5, §4, §6, §8, N4.x); comments cite
// them by id.
//
// Files: client.go (Client, Result), stream.go (a Stream's public calls and
// its event loop), direction.go (the per-direction state machine),
// replies.go (what each reply does), mutation.go and headers.go (the header
// rules), transport.go (the Transport interface and its gRPC
// implementation), sync.go (the in-process transport), release.go (giving
// an in-process processor its replies back once applied), pool.go (Streams
// reused after Release, and what a released one keeps), config.go.
//
// Its users:
//   - the built-in data plane (edge/), which runs every production request
//     through the processor with a [Stream] per HTTP request, over [Sync]
//     (the processor's handler called in the request's goroutine) or [GRPC];
//   - the processor's tests, through the test-support package
//     extprocfiltertest beside this one (a whole request with its Do, an
//     in-memory gRPC stand-in with its Direct), with deliberately wrong
//     processors to make sure the filter catches every rule violation (each
//     failure is reported in [Result.Failure] as one of the Err values).
//
// A Stream is synchronous: each call hands Envoy's filter one event of the
// HTTP request (headers, a body chunk, trailers) and returns what Envoy would
// do next (forward headers and bytes, hold, send a local reply, reset).
// Replies and timers that fire between calls are handled at the start of the
// next call, as Envoy's event loop would have handled them. STREAMED bodies
// may have several chunks outstanding ([Config.MaxOutstandingChunks]).
//
// Not modelled: FULL_DUPLEX_STREAMED and GRPC body modes (rejected by
// [Config.Validate]; a mode_override into them is dropped),
// send_body_without_waiting_for_header_response, observability mode, body
// data arriving while a headers reply is pending (R1.5c i/ii: the synchronous
// API always waits for the headers reply first), watermarks/backpressure,
// forward_rules, metadata_context contents (always empty), typed dynamic
// metadata, ImmediateResponse.grpc_status, and local replies generated
// upstream of the filter (N4.5: whether those go through the processor is the
// caller's choice).
//
// The package holds no gateway logic and must not import the processor
// (extproc), the kernel, the stores or anything else of Tollgate: only the
// Envoy protos, gRPC and protobuf. Nothing in it may import its test-support
// package.
package extprocfilter
