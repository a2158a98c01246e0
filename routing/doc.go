// Package routing chooses where a request goes among a model group's
// deployments and learns from the answers: one implementation for both data
// planes (Envoy and the built-in one), because the processor decides and the
// data planes only carry it out.
//
// It owns:
//   - groups and deployments (group.go): strategies (weighted, least-busy,
//     latency, usage), the weighted pick, each deployment's rpm/tpm scope;
//   - deployment health (health.go): the Router keeps, per deployment,
//     cooldowns (allowed_fails within a minute, a 429 for its retry-after),
//     requests in flight, time to first byte (EWMA) and tokens this minute,
//     orders a group's available deployments by its strategy and tells a
//     CooldownObserver the cooldowns it starts;
//   - cooldown sharing between replicas (cooldown.go: CooldownShare, Adopt);
//   - retry policy (retry.go): an attempt's place in its retries and its
//     token payload, how a failed attempt is classified (retry another
//     deployment, the context window or content policy fallbacks, or not at
//     all), the statuses a data plane's retry policy retries, fallback
//     reasons, backoff;
//   - one request's routing (route.go): Route decides what to try next (the
//     first deployment, the next one when a deployment's quota is full, the
//     fallback groups), whether and where a failed attempt is retried and
//     when to stop, and feeds the health state with the answers;
//   - per-try routing (pertry.go): which groups are routed per try, the
//     group chain, the try order and its skip masks, an upstream try's
//     deployment and whether the data plane retries it;
//   - the signed values (token.go): the retry token's signature and the
//     per-try signed client header (ClientFields), both under the key the
//     replicas share;
//   - per-try state (try.go): Try, a stream's part in per-try routing, and
//     Reserved, the reservation the router-level stream hands the first try.
//
// It is logic over small interfaces: Clock (the time), Groups (the groups a
// request's key may use), Health (the shared deployment state: Router, whose
// cooldowns spread through CooldownShare) and Limiter (the caller's
// accountant, which admits the request on a deployment with its rpm/tpm
// scope: Route.Admit passes a deployment whose quota is full over to the
// next, then to the fallback groups'). The processor (extproc/routing.go
// and pertry.go) keeps the ext_proc side: the signing key and the header
// names, the reply headers and redirects, the pricing and translator of
// each candidate (its Limiter). The xDS
// builder (xds/pertry.go) emits the per-try routes, retry policy,
// backoff and outlier ejection from the same functions and values, so the
// data planes and the processor agree. Tests need no processor: a fake Clock,
// a map of groups and a fake Limiter (route_test.go).
//
// Imports: kernel, upstream. Never translate/, extproc/ nor xds/.
package routing
