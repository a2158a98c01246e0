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

const upsertTotalSQL = `INSERT INTO spend_hourly (scope_kind, scope_id, hour, cost, requests, tokens) VALUES (?, ?, ?, ?, ?, ?)
	ON CONFLICT (scope_kind, scope_id, hour) DO UPDATE SET cost = cost + excluded.cost,
	requests = requests + excluded.requests, tokens = tokens + excluded.tokens`

// statements are the writer connection's prepared statements.
type statements struct {
	insertOne   *sql.Stmt // one ledger row
	chunks      []chunkStmt
	upsertTotal *sql.Stmt
	get         *sql.Stmt // on the read pool: one config object
}

// chunkStmt inserts rows ledger rows at once.
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
	s.stmts.upsertTotal = prep(upsertTotalSQL)
	if err == nil {
		s.stmts.get, err = s.r.PrepareContext(ctx, `SELECT doc, version, updated_ns FROM objects WHERE kind = ? AND id = ?`)
	}
	if err != nil {
		return s.wrap("prepare", err)
	}
	return nil
}

func (st *statements) close() error {
	all := []*sql.Stmt{st.insertOne, st.upsertTotal, st.get}
	for _, c := range st.chunks {
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
	upsert := tx.StmtContext(ctx, s.stmts.upsertTotal)
	for _, t := range groupcommit.Totals(fresh) {
		if _, err := upsert.ExecContext(ctx, int64(t.Scope.Kind), t.Scope.ID, t.Hour.Unix(), int64(t.Cost), t.Requests, t.Tokens); err != nil {
			return err
		}
	}
	return nil
}

// insertRows inserts the batch's rows and returns the entries actually
// inserted: not those already recorded, and for a request id repeated in the
// batch only its first occurrence. The ledger is a rowid table, so the rows
// this transaction inserts are exactly those with a rowid above the largest
// one before it: when an INSERT skipped rows, they tell which were new.
func (s *Store) insertRows(ctx context.Context, tx *sql.Tx, batch []store.LedgerEntry) ([]store.LedgerEntry, error) {
	var before int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(rowid), 0) FROM ledger`).Scan(&before); err != nil {
		return nil, err
	}
	one := tx.StmtContext(ctx, s.stmts.insertOne)
	chunks := make([]chunkStmt, len(s.stmts.chunks))
	for i, c := range s.stmts.chunks {
		chunks[i] = chunkStmt{rows: c.rows, stmt: tx.StmtContext(ctx, c.stmt)}
	}
	args := make([]any, 0, max(s.cfg.insertRows, 1)*ledgerArity)
	var added int64
	for off := 0; off < len(batch); {
		stmt, part := one, batch[off:off+1]
		for _, c := range chunks { // the largest statement that fits
			if len(batch)-off >= c.rows {
				stmt, part = c.stmt, batch[off:off+c.rows]
				break
			}
		}
		off += len(part)
		args = args[:0]
		for i := range part {
			args = appendArgs(args, &part[i])
		}
		res, err := stmt.ExecContext(ctx, args...)
		if err != nil {
			return nil, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return nil, err
		}
		added += k
	}
	if added == int64(len(batch)) {
		return batch, nil // every row was new
	}
	rows, err := tx.QueryContext(ctx, `SELECT request_id FROM ledger WHERE rowid > ?`, before)
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
