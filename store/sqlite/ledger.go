package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

// plainColumns are what every ledger row sets. A plain row (no run, tags,
// unit, cache or requested model; priced) is inserted with these alone and
// the later columns keep their defaults (NULL; unpriced 0), as a total
// without cache counts is upserted without them: most rows and totals take
// the statements of before those columns (bench/README.md).
const plainColumns = `request_id, key_id, user_id, team_id, org_id, customer_id, model, deployment,
	input, cached_input, cache_write, output, reasoning, cost, status, http_status, stream, started_ns, ended_ns`

const ledgerColumns = plainColumns + `, unpriced, run_id, requested_model, unit, quantity, cache, cache_saved, tags`

// totalPlainColumns and totalCacheColumns are spend_hourly's, the cache
// counts' upserted only for a total that has some.
const (
	totalPlainColumns = `scope_kind, scope_id, hour, cost, requests, tokens`
	totalCacheColumns = `, cache_hits, cache_misses, cache_saved`
)

// The arguments of one row or total of each shape: one per column.
var (
	plainArity  = columnCount(plainColumns)
	ledgerArity = columnCount(ledgerColumns)
	totalArity  = [...]int{columnCount(totalPlainColumns), columnCount(totalPlainColumns + totalCacheColumns)}
)

func columnCount(cols string) int { return strings.Count(cols, ",") + 1 }

// rowShape is the statement set a row is inserted with.
type rowShape uint8

const (
	shapePlain rowShape = iota // plainColumns
	shapeFull                  // ledgerColumns
)

// shapeOf is e's row shape: plain unless a later column differs from its
// default.
func shapeOf(e *store.LedgerEntry) rowShape {
	if e.Unpriced || e.RunID != "" || e.RequestedModel != "" || e.Unit != "" && e.Unit != kernel.UnitTokens ||
		e.Cache != store.CacheNone || len(e.Tags) > 0 {
		return shapeFull
	}
	return shapePlain
}

// arity is the arguments of one row of shape k.
func (k rowShape) arity() int { return [...]int{plainArity, ledgerArity}[k] }

// totalShape is a total's rowShape: plain without cache counts.
func totalShape(t *groupcommit.Total) rowShape {
	if t.Cache != (store.CacheCounts{}) {
		return shapeFull
	}
	return shapePlain
}

// totalArity is the arguments of one total of shape k.
func (k rowShape) totalArity() int { return totalArity[k] }

// shaped returns the length of the run of items from off on that have the
// shape of the first.
func shaped[T any](items []T, off int, shape func(*T) rowShape) (rowShape, int) {
	k, n := shape(&items[off]), 1
	for off+n < len(items) && shape(&items[off+n]) == k {
		n++
	}
	return k, n
}

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

func insertLedgerSQL(k rowShape, rows int) string {
	cols := [...]string{plainColumns, ledgerColumns}[k]
	return `INSERT INTO ledger (` + cols + `) VALUES ` + values(rows, k.arity()) +
		` ON CONFLICT (request_id) DO NOTHING`
}

// upsertTotalsSQL adds rows totals to the hourly spend rows. The totals of
// one batch are of distinct (scope, hour) rows.
func upsertTotalsSQL(k rowShape, rows int) string {
	cols, set := totalPlainColumns, `cost = cost + excluded.cost,
	requests = requests + excluded.requests, tokens = tokens + excluded.tokens`
	if k == shapeFull {
		cols += totalCacheColumns
		set += `, cache_hits = cache_hits + excluded.cache_hits,
	cache_misses = cache_misses + excluded.cache_misses, cache_saved = cache_saved + excluded.cache_saved`
	}
	return `INSERT INTO spend_hourly (` + cols + `) VALUES ` + values(rows, k.totalArity()) +
		` ON CONFLICT (scope_kind, scope_id, hour) DO UPDATE SET ` + set
}

// statements are the store's prepared statements on database/sql.
type statements struct {
	get *sql.Stmt // on the read pool: one config object
}

// prepare prepares the read pool's statements and the ledger writer's, so
// that a statement that does not compile fails Open, not every ledger write.
func (s *Store) prepare(ctx context.Context) error {
	var err error
	if s.stmts.get, err = s.r.PrepareContext(ctx, `SELECT doc, version, updated_ns FROM objects WHERE kind = ? AND id = ?`); err != nil {
		return s.wrap("prepare", err)
	}
	return s.wrap("prepare", s.raw(ctx, func(dc any) error { return s.lw.prepare(ctx, dc) }))
}

func (st *statements) close() error {
	if st.get == nil {
		return nil
	}
	return st.get.Close()
}

// chunkSizes are the multi-row statements prepared for up to n rows: n, n/4,
// n/16, … down to 4, so a batch of any size takes few statements.
func chunkSizes(n int) []int {
	var out []int
	for ; n >= 4; n /= 4 {
		out = append(out, n)
	}
	return out
}

// totalRows is the largest multi-row spend upsert: a batch adds to one row
// per scope and hour, a few dozen in a gateway's batch.
const totalRows = 64

// ledgerWriter writes ledger batches on the writer connection below
// database/sql (sql.Conn.Raw): its statements are prepared once on the
// driver connection, their arguments go in one reused slice, and the
// statements inside a transaction run without a context the driver would
// watch with a goroutine per statement. database/sql's own per-statement
// work (argument conversion into a new slice, a result, a goroutine per
// transaction) was a large part of a small batch's cost. Only the
// group-commit goroutine uses it, then Close.
type ledgerWriter struct {
	conn    any         // the driver connection the statements belong to
	inserts [2]stmtSet  // ledger rows, by rowShape
	upserts [2]stmtSet  // spend totals, by rowShape
	newest  driver.Stmt // the request ids of the k newest ledger rows
	owner   driver.Stmt // one native response id (response_owners.go)
	args    []driver.NamedValue
	rowsMax int            // rows of the largest insert
	boxes   map[string]any // see box
}

// maxBoxes bounds the strings box keeps.
const maxBoxes = 4096

// box returns v as an interface value, reusing the one made for an equal
// string before: the ids, model and deployment of a ledger row repeat from
// row to row (a handful of keys, teams and models carry most of the
// traffic), and boxing each anew was most of the writer's allocations. It
// keeps a copy of v, not v, which may point into a larger buffer (a
// request's body).
func (w *ledgerWriter) box(v string) any {
	if v == "" {
		return "" // boxing "" does not allocate
	}
	if b, ok := w.boxes[v]; ok {
		return b
	}
	if w.boxes == nil || len(w.boxes) >= maxBoxes {
		w.boxes = make(map[string]any, 64)
	}
	v = strings.Clone(v)
	b := any(v)
	w.boxes[v] = b
	return b
}

// chunk is a statement that writes rows rows at once.
type chunk struct {
	rows int
	stmt driver.Stmt
}

// stmtSet is the statements of one table and shape: one row, and several
// rows at once, largest first.
type stmtSet struct {
	one    driver.Stmt
	chunks []chunk
}

// pick returns the largest statement that writes at most left rows (one,
// the single-row statement, if none does) and how many rows it writes.
func (s *stmtSet) pick(left int) (driver.Stmt, int) {
	for _, c := range s.chunks {
		if left >= c.rows {
			return c.stmt, c.rows
		}
	}
	return s.one, 1
}

// prepare prepares the set: sql(n) is the statement for n rows, n one and
// each of sizes.
func (s *stmtSet) prepare(prep func(string) driver.Stmt, sql func(rows int) string, sizes []int) {
	s.one = prep(sql(1))
	for _, n := range sizes {
		s.chunks = append(s.chunks, chunk{rows: n, stmt: prep(sql(n))})
	}
}

// stmts is every statement of the set.
func (s *stmtSet) stmts() []driver.Stmt {
	out := []driver.Stmt{s.one}
	for _, c := range s.chunks {
		out = append(out, c.stmt)
	}
	return out
}

// prepare prepares the statements on the driver connection dc.
func (w *ledgerWriter) prepare(ctx context.Context, dc any) error {
	pc, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return fmt.Errorf("driver connection %T cannot prepare with a context", dc)
	}
	*w = ledgerWriter{conn: dc, rowsMax: w.rowsMax, args: w.args, boxes: w.boxes}
	var err error
	prep := func(q string) driver.Stmt {
		if err != nil {
			return nil
		}
		var st driver.Stmt
		st, err = pc.PrepareContext(ctx, q)
		return st
	}
	for _, k := range [...]rowShape{shapePlain, shapeFull} {
		w.inserts[k].prepare(prep, func(n int) string { return insertLedgerSQL(k, n) }, chunkSizes(w.rowsMax))
		w.upserts[k].prepare(prep, func(n int) string { return upsertTotalsSQL(k, n) }, chunkSizes(totalRows))
	}
	w.newest = prep(`SELECT request_id FROM ledger ORDER BY rowid DESC LIMIT ?`)
	w.owner = prep(insertOwnerSQL)
	if err != nil {
		return errors.Join(err, w.close())
	}
	return nil
}

// close closes the statements; the connection must be held (Raw).
func (w *ledgerWriter) close() error {
	var errs []error
	all := []driver.Stmt{w.newest, w.owner}
	for k := range w.inserts {
		all = slices.Concat(all, w.inserts[k].stmts(), w.upserts[k].stmts())
	}
	for _, st := range all {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	w.conn, w.inserts, w.upserts, w.newest, w.owner = nil, [2]stmtSet{}, [2]stmtSet{}, nil, nil
	return errors.Join(errs...)
}

// raw runs f on the writer's driver connection, held for the call.
func (s *Store) raw(ctx context.Context, f func(dc any) error) error {
	c, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	return errors.Join(c.Raw(f), c.Close())
}

// closeLedger closes the ledger writer's statements, after the writer stopped.
func (s *Store) closeLedger(ctx context.Context) error {
	if s.lw.conn == nil {
		return nil
	}
	return s.raw(context.WithoutCancel(ctx), func(dc any) error {
		if dc != s.lw.conn {
			// database/sql replaced the connection (it never does with
			// these settings): the statements went with the old one.
			return nil
		}
		return s.lw.close()
	})
}

// writeBatch is the group-commit FlushFunc: one transaction inserts the rows
// not yet recorded and adds exactly those to the hourly totals. Only the
// writer's goroutine calls it.
func (s *Store) writeBatch(ctx context.Context, batch []store.LedgerEntry) error {
	return s.wrap("ledger", s.raw(ctx, func(dc any) error { return s.lw.write(ctx, dc, batch) }))
}

func (w *ledgerWriter) write(ctx context.Context, dc any, batch []store.LedgerEntry) error {
	if dc != w.conn {
		if w.conn != nil {
			// database/sql replaced the connection (it never does with
			// these settings): the old statements went with the old one.
			*w = ledgerWriter{rowsMax: w.rowsMax}
		}
		if err := w.prepare(ctx, dc); err != nil {
			return fmt.Errorf("prepare: %w", err)
		}
	}
	bt, ok := dc.(driver.ConnBeginTx)
	if !ok {
		return fmt.Errorf("driver connection %T cannot begin with a context", dc)
	}
	// BEGIN IMMEDIATE may wait for another process's write lock: ctx ends
	// that wait. The statements inside only run (nothing waits once the
	// lock is held): ctx is checked between them.
	tx, err := bt.BeginTx(ctx, driver.TxOptions{})
	if err != nil {
		return err
	}
	if err := w.insertBatch(ctx, batch); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func (w *ledgerWriter) insertBatch(ctx context.Context, batch []store.LedgerEntry) error {
	if err := w.insertOwners(ctx, batch); err != nil {
		return err
	}
	fresh, err := w.insertRows(ctx, batch)
	if err != nil {
		return err
	}
	totals := groupcommit.Totals(fresh)
	for off := 0; off < len(totals); {
		shape, run := shaped(totals, off, totalShape)
		stmt, n := w.upserts[shape].pick(run)
		ar := shape.totalArity()
		args := w.argSlice(n * ar)
		for i, t := range totals[off : off+n] {
			a := args[i*ar : (i+1)*ar]
			a[0].Value, a[1].Value, a[2].Value = int64(t.Scope.Kind), w.box(t.Scope.ID), t.Hour.Unix()
			a[3].Value, a[4].Value, a[5].Value = int64(t.Cost), t.Requests, t.Tokens
			if shape == shapeFull {
				a[6].Value, a[7].Value, a[8].Value = t.Cache.Hits, t.Cache.Misses, int64(t.Cache.Saved)
			}
		}
		off += n
		if _, err := w.exec(ctx, stmt, args); err != nil {
			return err
		}
	}
	return nil
}

// insertRows inserts the batch's rows and returns the entries actually
// inserted: not those already recorded, and for a request id repeated in the
// batch only its first occurrence. The ledger is a rowid table that is only
// appended to, so each row inserted gets a rowid above every existing one:
// when an INSERT skipped rows, the k rows this transaction inserted are the k
// largest rowids. Rows go in batch order, each run of one shape (shapeOf) by
// that shape's statements.
func (w *ledgerWriter) insertRows(ctx context.Context, batch []store.LedgerEntry) ([]store.LedgerEntry, error) {
	var added int64
	for off := 0; off < len(batch); {
		shape, run := shaped(batch, off, shapeOf)
		stmt, n := w.inserts[shape].pick(run)
		ar := shape.arity()
		args := w.argSlice(n * ar)
		for i := range batch[off : off+n] {
			w.setArgs(args[i*ar:(i+1)*ar], &batch[off+i])
		}
		off += n
		k, err := w.exec(ctx, stmt, args)
		if err != nil {
			return nil, err
		}
		added += k
	}
	if added == int64(len(batch)) {
		return batch, nil // every row was new
	}
	inserted, err := w.newestIDs(ctx, added)
	if err != nil {
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

// newestIDs returns the request ids of the k newest ledger rows.
func (w *ledgerWriter) newestIDs(ctx context.Context, k int64) (map[string]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q, ok := w.newest.(driver.StmtQueryContext)
	if !ok {
		return nil, fmt.Errorf("driver statement %T cannot query with a context", w.newest)
	}
	rows, err := q.QueryContext(context.WithoutCancel(ctx), []driver.NamedValue{{Ordinal: 1, Value: k}})
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, k)
	dest := make([]driver.Value, 1)
	for {
		if err := rows.Next(dest); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, errors.Join(err, rows.Close())
		}
		id, ok := dest[0].(string)
		if !ok {
			return nil, errors.Join(fmt.Errorf("request id of type %T", dest[0]), rows.Close())
		}
		ids[id] = true
	}
	return ids, rows.Close()
}

// argSlice returns the first n of the reused arguments, ordinals set.
func (w *ledgerWriter) argSlice(n int) []driver.NamedValue {
	for len(w.args) < n {
		w.args = append(w.args, driver.NamedValue{Ordinal: len(w.args) + 1})
	}
	return w.args[:n]
}

// exec runs stmt with args and returns the rows it changed, then drops the
// arguments' values so that no entry stays reachable from w.
func (w *ledgerWriter) exec(ctx context.Context, stmt driver.Stmt, args []driver.NamedValue) (int64, error) {
	defer func() {
		for i := range args {
			args[i].Value = nil
		}
	}()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ec, ok := stmt.(driver.StmtExecContext)
	if !ok {
		return 0, fmt.Errorf("driver statement %T cannot execute with a context", stmt)
	}
	res, err := ec.ExecContext(context.WithoutCancel(ctx), args)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// setArgs sets a, plainArity or ledgerArity arguments, to e's columns.
func (w *ledgerWriter) setArgs(a []driver.NamedValue, e *store.LedgerEntry) {
	a[0].Value, a[1].Value, a[2].Value, a[3].Value = e.RequestID, w.box(e.KeyID), w.box(e.UserID), w.box(e.TeamID)
	a[4].Value, a[5].Value = w.box(e.OrgID), w.box(e.CustomerID)
	a[6].Value, a[7].Value = w.box(e.Model), w.box(e.Deployment)
	a[8].Value, a[9].Value, a[10].Value = e.Usage.Input, e.Usage.CachedInput, e.Usage.CacheWrite
	a[11].Value, a[12].Value, a[13].Value = e.Usage.Output, e.Usage.Reasoning, int64(e.Cost)
	a[14].Value, a[15].Value, a[16].Value = int64(e.Status), int64(e.HTTPStatus), b2i(e.Stream)
	a[17].Value, a[18].Value = e.StartedAt.UnixNano(), e.EndedAt.UnixNano()
	if len(a) == plainArity {
		return
	}
	a[19].Value = b2i(e.Unpriced)
	a[20].Value = nil // NULL: no run
	if e.RunID != "" {
		a[20].Value = w.box(e.RunID)
	}
	a[21].Value = nil // NULL: the group's own name
	if e.RequestedModel != "" {
		a[21].Value = w.box(e.RequestedModel)
	}
	a[22].Value, a[23].Value = nil, nil // NULL: tokens
	if e.Unit != "" && e.Unit != kernel.UnitTokens {
		a[22].Value, a[23].Value = w.box(string(e.Unit)), e.Quantity
	}
	a[24].Value, a[25].Value = nil, nil // NULL: no cache, nothing saved
	if e.Cache != store.CacheNone {
		a[24].Value, a[25].Value = int64(e.Cache), int64(e.CacheSaved)
	}
	a[26].Value = nil // NULL: no tags
	if len(e.Tags) > 0 {
		a[26].Value = w.box(strings.Join(e.Tags, ","))
	}
}
