// Package extproc is Tollgate's Envoy ext_proc server: the gateway logic of one
// HTTP request, driven over one gRPC stream per request.
//
// It owns the request lifecycle of DESIGN.md:
//
//   - request headers: the endpoint is looked up by exact path (endpoints.go;
//     unknown path or method → 404), the virtual key is read from
//     "Authorization: Bearer", x-api-key or api-key and authenticated (401);
//     GET /v1/models is answered at once; otherwise CONTINUE, the headers stay
//     held because the request body is BUFFERED.
//   - request body: one scan of the JSON (no decode) finds model, stream,
//     max_tokens/max_completion_tokens, user, stream_options; malformed JSON is
//     a 400 naming line, column and byte; a duplicated model/stream/max_tokens/
//     user field is refused (parsers disagree on which copy wins). The model is
//     resolved (404/403), the request admitted on every scope of the key plus
//     the end customer (x-tollgate-customer header, else the user field), and
//     the reply rewrites the request for the provider: x-tollgate-route always
//     overwritten, the client's credentials removed and the provider's set,
//     :path, the body edited in place (model renamed, include_usage forced on
//     streams, max tokens clamped), content-length set or removed,
//     clear_route_cache=true.
//   - response headers: a 2xx text/event-stream switches the response body to
//     STREAMED (mode_override) and drops content-length; x-tollgate-request-id
//     and the x-ratelimit-* of the key are added.
//   - response body: JSON bodies give usage and the cost is settled while the
//     headers are still held (x-tollgate-cost, in dollars); SSE chunks, split
//     anywhere, are parsed incrementally and usage taken from the final events;
//     the usage event the gateway asked for is removed when the client did not.
//     Upstream errors are rewritten into OpenAI's error shape with the upstream
//     status, with anything key-like redacted.
//
// Routing: when the Catalog is a GroupCatalog the processor chooses the
// deployment itself among the model group's, with a routing.Router
// (routing/): deployments cooling down are skipped, the rest ordered by the
// group's strategy, and the request admitted with the deployment's rpm/tpm
// as a scope of its own (kernel.ScopeDeployment), moving on to the next
// deployment, then the fallback groups, when that quota is full. Response
// statuses feed the Router (cooldowns, time to first byte, in flight), which
// one processor shares across its requests and, through a CooldownShare,
// with other replicas. Replies name the deployment in x-tollgate-deployment.
// This package drives routing per request (routing.go and pertry.go);
// the policy itself is routing's.
//
// Settlement happens exactly once per admitted request, on every path: at the
// end of the body or at the trailers, or — when the stream ends early (client
// disconnect, upstream reset, stream cancelled) — from what was observed, as
// StatusAborted: reported usage if it arrived, otherwise the input estimated
// from the prompt bytes (4 bytes a token) and the output from the streamed
// text. A request that produced tokens is never settled at $0. Upstream errors
// settle as StatusFailed with zero usage.
//
// Client errors (translate/errors.go, refusals.go) use OpenAI's shape
// {"error":{"message","type","param","code"}} unless the endpoint has its own:
//
//	400 invalid_request_error (code invalid_json for malformed bodies)
//	401 invalid_api_key        missing, unknown, expired or revoked key
//	403 model_not_allowed
//	404 model_not_found, unknown_url
//	413 request_too_large      body above WithMaxBodyBytes
//	429 rate_limit_exceeded    with retry-after, retry-after-ms, x-ratelimit-*
//	400 budget_exceeded        type and code budget_exceeded, as LiteLLM: a
//	                           budget does not refill by retrying, so not a 429
//	400 model_price_missing    the deployment's model has no price and a strict
//	                           budget applies (kernel.ReasonUnpriced)
//	503 service_unavailable    Catalog or Accountant failing
//
// Endpoints are small specs registered by path (or path prefix, for path
// parameters; endpoints.go); providers are translate.Translators, one per
// client-API × provider pair, listed in one table (translate/translators.go).
// This package never reads or writes a provider's wire format: translate/
// does, and only it imports schema/<api>. The Responses and Conversations
// APIs' stored responses, native ids and background settlements are
// responsesapi's, which the stream calls with itself lent as a Stream
// (responses.go). Everything a request needs lives in its
// stream; the Processor holds only immutable configuration, so there is no
// lock on the request path.
//
// The gRPC server (server.go) decodes Envoy's ProcessingRequests with its own
// codec (codec.go): a hand decoder for the fields Envoy sends, with few
// allocations, that yields what proto.Unmarshal would and hands anything else
// to it; over gRPC a stream decodes all its messages into one (recvBuf). The
// replies are encoded by hand too (codec_encode.go), byte for byte as
// proto.Marshal would, and built with few allocations (replies.go); the plain
// CONTINUE replies are shared and sent pre-encoded, so a reply is read-only
// once returned. The cost per request and per streamed chunk is measured in a
// separate server process driven like Envoy (bench_test.go).
//
// In-process, the built-in data plane does not go through a stream at all: a
// Session is Process's loop without the transport, and the edge calls its
// Handle for each message in the request's own goroutine (extprocfilter.Sync),
// with no goroutine, channel or copy between them. Process runs on a Session
// too, so both paths share every line of the request's handling.
//
// Imports: kernel, translate, routing, upstream, ownership, responsesapi, Envoy's protos (and
// protobuf), grpc. It never imports store/, admin/, xds/, edge/ nor a wire
// schema: configuration, accounting and stored responses reach it only
// through the interfaces declared in deps.go and responses.go. deps.go also
// aliases the translate and routing names its callers use (Target, Router,
// Group, ...).
package extproc
