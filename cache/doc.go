// Package cache is Tollgate's response cache: exact and semantic, shared
// across replicas, replayed in the form the client asked for.
//
// It owns:
//
//   - the cache key (key.go): the client API, the model group, the scope the
//     entry is shared in (a key, a team or an organization — never across
//     organizations) and the request body in canonical JSON, with the fields
//     that do not change the answer removed (stream, stream_options, user,
//     metadata, store, service_tier, … per API: ignoredFields), so that key
//     order, whitespace and number spelling do not matter;
//   - the policy of one request (policy.go): whether it may be cached
//     (deterministic by default: temperature 0, or embeddings; "all" per
//     model group; x-tollgate-cache-ttl opts one request in), whether the
//     lookup and the write happen (Cache-Control no-cache / no-store) and for
//     how long (the model group's TTL or the request's x-tollgate-cache-ttl);
//   - what is stored (entry.go): the reply in the client API's non-stream
//     form (a chat.completion, a Responses response, an Anthropic message, a
//     Gemini GenerateContentResponse, …) with its usage and the cost it had.
//     A streamed reply is folded into that form as it passes (collect*.go),
//     and a hit is rendered back as the stream the client expects or as the
//     plain JSON body (render*.go), whichever way the entry was first seen;
//   - the backends behind one small interface, Backend: an in-process LRU
//     with TTL and a byte cap (memory.go), and Redis shared by replicas
//     (redis.go);
//   - the semantic layer (semantic.go): the prompt embedded through an
//     Embedder the gateway provides (its own routing and accounting), the
//     nearest cached prompt of the same namespace (scope, API, model group
//     and every request field except the prompt) above a threshold, from an
//     Index: in-process cosine (vector_memory.go) or PostgreSQL with pgvector
//     (pgvector.go).
//
// The processor calls it through an interface it declares itself; docs/caching.md
// says what is cached, where, for whom and what a hit costs.
//
// Imports: the standard library, kernel (usage and money), and its backends'
// drivers (go-redis, pgx). It never imports extproc, translate, routing, store
// or gateway.
package cache
