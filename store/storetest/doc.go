// Package storetest is the one conformance suite every store.Store backend
// runs (memory, SQLite, PostgreSQL), plus the benchmarks they share.
//
// A backend's test calls Run with a function that opens a fresh, empty store;
// the suite closes every store it opens. Bench does the same for benchmarks.
//
// Semantics the suite pins beyond the comments of package store:
//   - Put with ifVersion > 0 on an absent object is ErrConflict (it changed).
//   - Watch sends revisions greater than the one current when Watch was called,
//     in increasing order, and closes its channel once ctx ends.
//   - ScopeSpend and Series count the hour buckets that overlap [since, until):
//     exact on hour boundaries, partial hours counted whole otherwise.
//   - Series returns every bucket, empty ones with zeros, Start in UTC; an
//     empty range gives no buckets; a step that is not a whole number of hours
//     is an error.
//   - Entries and ledger times come back in UTC with nanosecond precision.
//   - After Close every method but Close returns ErrClosed.
//
// It imports kernel, store and testify; nothing imports it but tests.
package storetest
