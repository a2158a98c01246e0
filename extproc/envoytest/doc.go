// Package envoytest is Envoy's side of the ext_proc protocol, written in Go: a
// client that drives an envoy.service.ext_proc.v3.ExternalProcessor/Process
// server over a real gRPC stream the way Envoy's HTTP filter
// envoy.filters.http.ext_proc does.
//
// It owns the message order per processing mode, held headers, buffered and
// streamed bodies, mode_override, the checks Envoy applies to replies (spurious
// replies, header mutation rules, content-length, message timeouts, immediate
// responses) and Envoy's failure semantics. The rules it implements are the
// numbered rules of the project's reference ext_proc spec (R1–R5, §4, §8);
// comments cite them.
//
// Two users depend on it:
//   - the processor's tests, which run requests through the processor with
//     [Client.Do] or step by step with a [Stream], and which use deliberately
//     wrong processors to make sure the client catches every rule violation;
//   - the built-in data plane (edge/), which runs production requests through
//     the processor with a [Stream] per HTTP request, in-process with [Direct]
//     or over gRPC.
//
// A Stream is synchronous: each call hands Envoy's filter one event of the
// HTTP request (headers, a body chunk, trailers) and returns what Envoy would do
// next (forward headers and bytes, hold, send a local reply, reset). STREAMED
// bodies may have several chunks outstanding ([Config.MaxOutstandingChunks]).
// The FULL_DUPLEX_STREAMED and GRPC body modes, observability mode and
// send_body_without_waiting_for_header_response are not modelled.
//
// The package holds no gateway logic and must not import the processor
// (extproc), the kernel or the stores: only the Envoy protos, gRPC and
// protobuf.
package envoytest
