// Package postgres is the PostgreSQL backend of store.Store (pgx v5): versioned
// configuration objects with a store-wide revision, a group-committed ledger
// with hourly spend totals, spend queries and the admin audit log.
//
// # Schema and migrations
//
// Migrations are embedded (migrations/*.sql) and applied by goose v3 in Open,
// under a PostgreSQL advisory lock so replicas starting together migrate once.
// Ledger times are stored as Unix nanoseconds so entries round-trip exactly.
//
// # Configuration and Watch
//
// Every Put or Delete bumps the single row of config_revision in its own
// transaction (the row lock serialises config writers, so revisions are gapless
// and in commit order) and sends pg_notify('tollgate_config', revision). Watch
// LISTENs on a dedicated connection (outside the pool) and polls the revision
// every poll interval as a fallback; while the LISTEN connection is down it
// polls every 250ms and reconnects. Every replica sharing the database sees a
// change within one second.
//
// # Ledger (group commit)
//
// Append puts entries on a bounded queue (WithQueueSize); when it is full Append
// waits — backpressure, never unbounded memory — until its context ends
// (store.ErrQueueFull). One writer goroutine drains the queue without blocking,
// waits up to WithWindow for more, and writes at most WithBatchSize entries in
// one transaction:
//
//  1. rows sorted by request id, duplicates within the batch dropped, inserted
//     with one multi-row INSERT … SELECT FROM unnest(…) ON CONFLICT (request_id)
//     DO NOTHING RETURNING request_id;
//  2. for the rows actually inserted, cost/requests/tokens coalesced per
//     (scope, UTC hour) and upserted into spend_hourly in (kind, id, hour) order.
//
// Every writer of every replica takes row locks in the same order, so
// concurrent writers never deadlock; a batch retried after a lost commit
// acknowledgement inserts nothing and adds nothing (idempotent by request id).
// A failed batch is retried with backoff (WithRetryBackoff, doubling to 2s)
// until PostgreSQL is back: nothing is dropped during an outage; the queue
// fills and Append applies backpressure. Flush is a barrier through the same
// queue. Close stops new Appends, drains the queue and returns an error naming
// the number of entries it could not write if its context ends first. A crash
// loses what was queued and not yet committed (at most the queue).
//
// # Spend
//
// ScopeSpend and Series read spend_hourly; a bound that is not on an hour
// counts the whole hour containing it (the conservative side for budgets).
//
// This package imports kernel, store and its driver (pgx, goose) only.
package postgres
