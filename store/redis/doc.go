// Package redis holds the admission counters shared by every Tollgate replica
// in Redis (go-redis v9), with exactly the semantics of kernel.State.
//
// # What is stored
//
// All keys share the hash tag "{prefix}" (WithPrefix, default "tg"), so every
// script's keys are in one slot (Redis Cluster works, on one shard).
//
//   - {tg}:s:<kind>:<id> — per scope: in-flight requests (f), the current UTC
//     minute (m) and its requests (r) and tokens (k). A later minute resets r
//     and k; an earlier one counts in the stored minute (never back).
//   - {tg}:w:<kind>:<len>:<id>:<period>:<start> — per budget window (keyed by
//     the window start from kernel.Period.Window, so it resets exactly at the
//     boundary; TTL one day past its end, none for PeriodTotal): spent (sp),
//     reserved (rs) and the seeded marker (sd).
//   - {tg}:r:<id> — an open reservation: what Settle needs (JSON), its worst
//     cost, reserved amount, tpm tokens and admission minute.
//   - {tg}:leases — a sorted set of open reservations by lease deadline (µs).
//
// # Scripts
//
// Admit is one Lua script over every scope of the request (all or nothing),
// run with EVALSHA (loaded on first NOSCRIPT). It applies kernel.State.Admit's
// rules in its order: duplicate open id → ReasonDuplicate; budgets of every
// scope first (strict: spent+reserved+worst ≤ limit in every window, Clamp
// lowering the output bound to the largest n ≥ 1 that fits; estimate: refuse
// when spent ≥ limit); then per scope, in request order, first failure decides:
// expired key, model not allowed, max parallel, rpm, tpm (strict: input bound +
// the possibly clamped output bound; estimate: ceil(prompt bytes/4)), budget.
// Nothing is reserved unless everything passes; then every scope counts one
// request, its tokens and one in-flight request, and every budget window of the
// request holds the worst cost (0 in estimate mode). Expiry and model checks
// and all window bounds are computed in Go and passed in; money is passed as
// integers split so that Lua's doubles stay exact (values below 2^53 nano-USD,
// about $9M; larger limits lose exactness).
//
// Settle and Expire are one script per reservation: idempotent on the
// reservation record (the first to delete it wins), they release the
// reservation from the windows it was made in, add the cost to the windows
// current at now, free the in-flight slots and, on Settle, correct the tpm
// count to Usage.Total() while the admission minute is still current. Expire
// charges the full worst cost with StatusExpired. The cost is computed in Go
// (kernel.Cost) from the price saved with the reservation; the admitting
// replica keeps the reservation in memory so Settle is one round trip.
//
// # Pipelining
//
// Script calls of concurrent callers are sent in pipelines (WithPipeline: a few
// goroutines each take what is queued, up to a bound, without waiting), so Redis
// answers many admissions per system call; a lone caller pays no extra delay.
// Close stops these goroutines.
//
// # Redis holds no truth the ledger cannot rebuild
//
// A budget window is usable only once seeded: when admission meets a window
// without the seeded marker (first use, or after a Redis restart or flush), it
// calls the SeedFunc (store.Spend.ScopeSpend over the window) and adds that to
// whatever was charged to the window meanwhile, then retries. Until a window is
// seeded no admission passes against it; a SeedFunc error is ErrUnavailable.
// Settlements charged between the ledger read and the marker may be counted
// twice (conservative). After a Redis loss, reservations open at the time are
// gone: their in-flight slots and reservations are freed and their settlements
// reach the ledger only (the counters learn them at the next seeding), and
// settlements still queued in the ledger writer at the moment of seeding are
// not counted until the window is seeded again. A SeedFunc should therefore
// Flush the replica's ledger before reading it (the tests do); entries still
// queued by other replicas while PostgreSQL was down are the remaining gap,
// bounded by their queues, and only matter when Redis and PostgreSQL fail
// together.
//
// # Failure policy
//
// When Redis cannot be reached, FailClosed (default) makes Admit return
// ErrUnavailable (the gateway answers 503). LocalFallback admits against an
// in-process kernel.State, its windows seeded from the ledger on first use:
// limits then hold per replica only, and reservations made locally are settled
// locally. Settle of a Redis reservation while Redis is down returns
// ErrUnavailable; the caller still appends the ledger entry, and the lease
// expires the reservation (at its worst cost) once Redis is back.
//
// This package imports kernel and go-redis only.
package redis
