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
//   - retry policy (retry.go): an attempt's place in its retries, how a
//     failed attempt is classified (retry another deployment, the context
//     window or content policy fallbacks, or not at all), fallback reasons,
//     backoff.
//
// It is logic over small inputs: the caller passes the time (now) and the
// response it saw; shared state comes through CooldownShare. The per-request
// driving (resolve, admit on the deployment's scope, retry tokens, per-try
// routing) is the processor's (extproc/routing.go, retry.go, pertry.go).
//
// Imports: kernel, upstream. Never translate/ nor extproc/.
package routing
