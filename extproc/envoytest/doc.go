// Package envoytest is Envoy's side of the ext_proc protocol, written in Go: a
// client that drives an envoy.service.ext_proc.v3.ExternalProcessor/Process
// server over a real gRPC stream the way Envoy's HTTP filter
// envoy.filters.http.ext_proc does.
//
// It owns the message order per processing mode, held headers, buffered and
// streamed bodies, mode_override, the checks Envoy applies to replies (spurious
// replies, header mutation rules, content-length, message timeouts, immediate
// responses) and Envoy's failure semantics. The rules it implements are the
// numbered rules of the project's reference ext_proc spec
// (shared/reference/extproc-spec.md: R1–R5, §4, §8); comments cite them.
//
// Two users depend on it:
//   - the processor's tests, which run requests through the processor with
//     [Client.Do] or step by step with a [Stream], and which use deliberately
//     wrong processors to make sure the client catches every rule violation
//     (each failure is reported in [Result.Failure] as one of the Err values);
//   - the built-in data plane (edge/), which runs production requests through
//     the processor with a [Stream] per HTTP request, in-process with [Sync]
//     (the processor's handler called in the request's goroutine) or over
//     gRPC. [Direct] runs a processor written as a Process loop in-process,
//     over a channel pipe.
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
// (extproc), the kernel or the stores: only the Envoy protos, gRPC and
// protobuf.
package envoytest
