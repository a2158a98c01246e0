// Package extproc is Tollgate's Envoy ext_proc server: the gateway logic of one
// HTTP request, driven over one gRPC stream per request.
//
// It owns the request lifecycle of DESIGN.md: authenticate the virtual key at
// request headers, parse the few fields it needs from the buffered request body,
// resolve the model to a deployment, admit the request (rate limits, budgets),
// rewrite the request for the provider (routing header, credentials, path, body),
// switch SSE responses to STREAMED, read usage from JSON bodies and SSE events,
// and settle exactly once per admitted request — also when the request ends
// abnormally.
//
// Endpoints are small specs registered by path (endpoints.go); providers are
// Translators, one file per client-API × provider pair (chat_openai.go,
// chat_azure.go, ...), registered by API and provider type.
//
// Imports: kernel, Envoy's protos, grpc. It never imports store/, admin/, xds/
// or edge/: configuration and accounting reach it only through the Catalog and
// Accountant interfaces declared in deps.go.
package extproc
