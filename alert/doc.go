// Package alert owns spend alerts: budget thresholds (default 50, 80 and 100
// percent of every budget window, soft ones included), keys about to expire,
// and spend anomalies (an hour's spend above N× the trailing average); each
// fires once per budget window (or key expiry, or hour) across replicas — a
// Claimer (SET NX in Redis, or memory for one process) decides which replica
// sends it — to the configured sinks: a generic JSON webhook signed with an
// HMAC header and retried with backoff, and a Slack-compatible incoming
// webhook. Every alert is appended to the audit log, and every delivery's
// state is kept (Notifier.Deliveries).
//
// The signature: x-tollgate-signature is "sha256=" and the hex HMAC-SHA256,
// under the sink's secret, of the x-tollgate-timestamp header's value (Unix
// seconds), a ".", and the body; a receiver recomputes it and rejects old
// timestamps (Verify).
//
// It reads spend through a function it is given (the accountant's counters
// or the ledger) and never admits or settles. It imports the standard
// library, kernel, the store's contracts (for the audit log) and go-redis;
// not extproc, accounting, admin or a concrete store.
package alert
