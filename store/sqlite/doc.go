// Package sqlite is the embedded default store: store.Store on one SQLite file,
// through modernc.org/sqlite (pure Go, no cgo).
//
// The file is in WAL mode. All writes go through one writer connection (and
// BEGIN IMMEDIATE, so several processes sharing the file queue on the write
// lock instead of failing); reads use a pool of read-only connections that run
// beside the writer. Migrations are embedded and applied by goose at Open.
//
// Configuration objects carry the store-wide revision at which they last
// changed; the revision lives in the file, so it survives restarts and is
// shared by every process that opens the file. Watch hears of local writes at
// once and polls the revision (every 250ms by default) for the others.
//
// The ledger goes through store/groupcommit: one transaction per batch,
// multi-row INSERT … ON CONFLICT(request_id) DO NOTHING statements, and
// hourly spend totals per scope upserted (also several rows a statement) in
// the same transaction for the rows actually inserted, so a retried batch
// never counts twice. The writer runs them on the driver connection
// (sql.Conn.Raw), prepared once at Open. Close writes everything queued. A
// crash (SIGKILL) loses at most what was appended during the last
// group-commit window and the commit in flight; everything Flush confirmed is
// kept (see crash_test.go, which measures it).
//
// It imports kernel, store, store/groupcommit, its driver and goose.
package sqlite
