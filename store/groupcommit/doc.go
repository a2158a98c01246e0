// Package groupcommit is the group-commit ledger writer shared by the durable
// store backends (SQLite, PostgreSQL).
//
// Callers Append settled requests to a bounded in-memory queue; one goroutine
// takes them in batches (bounded, non-blocking drains in the style of raft's
// group-commit loop) and hands each batch to a FlushFunc that writes it in one
// transaction. A batch that fails is retried, unchanged, until it succeeds or
// Close's context ends: nothing appended is dropped while the process lives.
// Totals coalesces a batch into per-(scope, hour) totals in a fixed order, so
// that concurrent writers update total rows in the same order.
//
// It owns the queue, batching, retry and flush barriers; it knows nothing of
// SQL. It imports only kernel, store and the standard library.
package groupcommit
