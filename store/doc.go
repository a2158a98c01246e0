// Package store is the persistence contract of Tollgate: the Store interface
// (versioned JSON configuration objects with a store-wide revision and Watch,
// the group-committed ledger of settled requests with hourly spend totals per
// scope, spend queries, the admin audit log), the interfaces every backend
// also implements outside Store (Responses, Sessions of the console,
// SpendByScope), the typed entities kept in it
// (keys, users, teams, orgs, customers, providers, deployments, model groups,
// prices, global settings, admins) and the errors every backend returns.
//
// It holds no backend, only the hourly spend buckets every backend answers
// ScopeSpend and Series from (HourRange, SeriesBuckets). The backends are its
// subpackages:
//
//   - sqlite: the embedded default, one file (modernc.org/sqlite, pure Go).
//   - postgres: PostgreSQL through pgx, for several replicas.
//   - memstore: everything in memory, for tests of the consuming packages.
//
// and their shared parts:
//
//   - groupcommit: the group-commit ledger writer (bounded queue, batches of
//     one transaction, retries, per-scope hourly totals in a fixed order).
//   - storetest: the one conformance suite (Run) and benchmarks (Bench) that
//     every backend runs.
//
// Import rules: this package imports only kernel and the standard library. A
// backend imports kernel, store, store/groupcommit, its driver (and goose for
// migrations) and nothing else of Tollgate; nothing but cmd/ (which wires a
// concrete store in) and tests imports a backend. Other packages consume a
// store through small interfaces they declare themselves.
package store
