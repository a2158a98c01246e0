package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

const ledgerColumns = `request_id, key_id, user_id, team_id, org_id, customer_id, model, deployment,
	input, cached_input, cache_write, output, reasoning, cost, status, http_status, stream, started_ns, ended_ns`

const ledgerArity = 19

// Append queues entries for the group-commit writer (see store.Ledger).
func (s *Store) Append(ctx context.Context, entries ...store.LedgerEntry) error {
	return s.ledger.Append(ctx, entries...)
}

// Flush returns once everything appended before the call is durable.
func (s *Store) Flush(ctx context.Context) error {
	return s.ledger.Flush(ctx)
}

// values is "(?, …), (?, …)…": rows groups of arity placeholders.
func values(rows, arity int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", arity), ", ") + ")"
	return strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

func insertLedgerSQL(rows int) string {
	return `INSERT INTO ledger (` + ledgerColumns + `) VALUES ` + values(rows, ledgerArity) +
		` ON CONFLICT (request_id) DO NOTHING`
}

const totalArity = 6

// upsertTotalsSQL adds rows totals to the hourly spend rows. The totals of
// one batch are of distinct (scope, hour) rows.
func upsertTotalsSQL(rows int) string {
	return `INSERT INTO spend_hourly (scope_kind, scope_id, hour, cost, requests, tokens) VALUES ` + values(rows, totalArity) +
		` ON CONFLICT (scope_kind, scope_id, hour) DO UPDATE SET cost = cost + excluded.cost,
	requests = requests + excluded.requests, tokens = tokens + excluded.tokens`
}

// statements are the writer connection's prepared statements.
type statements struct {
	insertOne *sql.Stmt   // one ledger row
	chunks    []chunkStmt // several ledger rows, largest first
	upsertOne *sql.Stmt   // one spend total
	upserts   []chunkStmt // several spend totals, largest first
	get       *sql.Stmt   // on the read pool: one config object
}

// chunkStmt writes rows rows at once.
type chunkStmt struct {
	rows int
	stmt *sql.Stmt
}

// chunkSizes are the multi-row INSERTs prepared for up to n rows: n, n/4,
// n/16, … down to 4, so a batch of any size takes few statements.
func chunkSizes(n int) []int {
	var out []int
	for ; n >= 4; n /= 4 {
		out = append(out, n)
	}
	return out
}

// pick returns the largest of chunks that writes at most left rows (one, the
// single-row statement, if none does) and how many rows it writes.
func pick(chunks []chunkStmt, one *sql.Stmt, left int) (*sql.Stmt, int) {
	for _, c := range chunks {
		if left >= c.rows {
			return c.stmt, c.rows
		}
	}
	return one, 1
}

// totalRows is the largest multi-row spend upsert: a batch adds to one row
// per scope and hour, a few dozen in a gateway's batch.
const totalRows = 64

func (s *Store) prepare(ctx context.Context) error {
	var err error
	prep := func(q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = s.w.PrepareContext(ctx, q)
		return st
	}
	s.stmts.insertOne = prep(insertLedgerSQL(1))
	for _, n := range chunkSizes(s.cfg.insertRows) {
		s.stmts.chunks = append(s.stmts.chunks, chunkStmt{rows: n, stmt: prep(insertLedgerSQL(n))})
	}
	s.stmts.upsertOne = prep(upsertTotalsSQL(1))
	for _, n := range chunkSizes(totalRows) {
		s.stmts.upserts = append(s.stmts.upserts, chunkStmt{rows: n, stmt: prep(upsertTotalsSQL(n))})
	}
	if err == nil {
		s.stmts.get, err = s.r.PrepareContext(ctx, `SELECT doc, version, updated_ns FROM objects WHERE kind = ? AND id = ?`)
	}
	if err != nil {
		return s.wrap("prepare", err)
	}
	return nil
}

func (st *statements) close() error {
	all := []*sql.Stmt{st.insertOne, st.upsertOne, st.get}
	for _, c := range append(st.chunks, st.upserts...) {
		all = append(all, c.stmt)
	}
	var errs []error
	for _, p := range all {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	return errors.Join(errs...)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func appendArgs(args []any, e *store.LedgerEntry) []any {
	return append(args, e.RequestID, e.KeyID, e.UserID, e.TeamID, e.OrgID, e.CustomerID, e.Model, e.Deployment,
		e.Usage.Input, e.Usage.CachedInput, e.Usage.CacheWrite, e.Usage.Output, e.Usage.Reasoning,
		int64(e.Cost), int64(e.Status), int64(e.HTTPStatus), b2i(e.Stream), e.StartedAt.UnixNano(), e.EndedAt.UnixNano())
}

// writeBatch is the group-commit FlushFunc: one transaction inserts the rows
// not yet recorded and adds exactly those to the hourly totals. Only the
// writer's goroutine calls it.
func (s *Store) writeBatch(ctx context.Context, batch []store.LedgerEntry) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap("ledger", err)
	}
	if err := s.insertBatch(ctx, tx, batch); err != nil {
		return errors.Join(s.wrap("ledger", err), rollback(tx))
	}
	return s.wrap("ledger commit", tx.Commit())
}

func (s *Store) insertBatch(ctx context.Context, tx *sql.Tx, batch []store.LedgerEntry) error {
	fresh, err := s.insertRows(ctx, tx, batch)
	if err != nil {
		return err
	}
	totals := groupcommit.Totals(fresh)
	args, used := s.args[:0], 0
	for off := 0; off < len(totals); {
		stmt, n := pick(s.stmts.upserts, s.stmts.upsertOne, len(totals)-off)
		part := totals[off : off+n]
		off += n
		args = args[:0]
		for _, t := range part {
			args = append(args, int64(t.Scope.Kind), t.Scope.ID, t.Hour.Unix(), int64(t.Cost), t.Requests, t.Tokens)
		}
		used = max(used, len(args))
		if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	clear(args[:used])
	s.args = args
	return nil
}

// insertRows inserts the batch's rows and returns the entries actually
// inserted: not those already recorded, and for a request id repeated in the
// batch only its first occurrence. The ledger is a rowid table that is only
// appended to, so each row inserted gets a rowid above every existing one:
// when an INSERT skipped rows, the k rows this transaction inserted are the k
// largest rowids.
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, batch []store.LedgerEntry) ([]store.LedgerEntry, error) {
	args, used := s.args[:0], 0
	var added int64
	for off := 0; off < len(batch); {
		stmt, n := pick(s.stmts.chunks, s.stmts.insertOne, len(batch)-off)
		part := batch[off : off+n]
		off += n
		args = args[:0]
		for i := range part {
			args = appendArgs(args, &part[i])
		}
		used = max(used, len(args))
		res, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...)
		if err != nil {
			return nil, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		added += k
	}
	clear(args[:used]) // keep no entry's strings alive
	s.args = args
	if added == int64(len(batch)) {
		return batch, nil // every row was new
	}
	rows, err := tx.QueryContext(ctx, `SELECT request_id FROM ledger ORDER BY rowid DESC LIMIT ?`, added)
	if err != nil {
		return nil, err
	}
	inserted := make(map[string]bool, added)
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, errors.Join(err, rows.Close())
		}
		inserted[id] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	fresh := make([]store.LedgerEntry, 0, added)
	for i := range batch {
		if inserted[batch[i].RequestID] {
			fresh = append(fresh, batch[i])
			delete(inserted, batch[i].RequestID) // later repeats were not inserted
		}
	}
	return fresh, nil
}
