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

// totalsChunk is how many total rows one upsert statement writes.
const totalsChunk = 256

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
		` ON CONFLICT (request_id) DO NOTHING RETURNING request_id`
}

func upsertTotalsSQL(rows int) string {
	return `INSERT INTO spend_hourly (scope_kind, scope_id, hour, cost, requests, tokens) VALUES ` + values(rows, 6) +
		` ON CONFLICT (scope_kind, scope_id, hour) DO UPDATE SET cost = cost + excluded.cost,
		requests = requests + excluded.requests, tokens = tokens + excluded.tokens`
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
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
	chunk := s.cfg.insertChunk
	inserted := make(map[string]struct{}, len(batch))
	args := make([]any, 0, min(chunk, len(batch))*ledgerArity)
	for off := 0; off < len(batch); off += chunk {
		part := batch[off:min(off+chunk, len(batch))]
		args = args[:0]
		for i := range part {
			e := &part[i]
			args = append(args, e.RequestID, e.KeyID, e.UserID, e.TeamID, e.OrgID, e.CustomerID, e.Model, e.Deployment,
				e.Usage.Input, e.Usage.CachedInput, e.Usage.CacheWrite, e.Usage.Output, e.Usage.Reasoning,
				int64(e.Cost), int64(e.Status), int64(e.HTTPStatus), b2i(e.Stream), e.StartedAt.UnixNano(), e.EndedAt.UnixNano())
		}
		rows, err := tx.QueryContext(ctx, s.sqlFor(len(part)), args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			inserted[id] = struct{}{}
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
	}
	if len(inserted) == 0 {
		return nil
	}
	// The rows inserted now: for a request id repeated in the batch, the first
	// occurrence is the one INSERT kept.
	fresh := batch
	if len(inserted) < len(batch) {
		fresh = make([]store.LedgerEntry, 0, len(inserted))
		for i := range batch {
			if _, ok := inserted[batch[i].RequestID]; ok {
				fresh = append(fresh, batch[i])
				delete(inserted, batch[i].RequestID)
			}
		}
	}
	totals := groupcommit.Totals(fresh)
	for off := 0; off < len(totals); off += totalsChunk {
		part := totals[off:min(off+totalsChunk, len(totals))]
		args = args[:0]
		for _, t := range part {
			args = append(args, int64(t.Scope.Kind), t.Scope.ID, t.Hour.Unix(), int64(t.Cost), t.Requests, t.Tokens)
		}
		if _, err := tx.ExecContext(ctx, upsertTotalsSQL(len(part)), args...); err != nil {
			return err
		}
	}
	return nil
}

// sqlFor returns the ledger INSERT for n rows; the full-chunk text is built once.
func (s *Store) sqlFor(n int) string {
	if n == s.cfg.insertChunk {
		s.fullInsertOnce.Do(func() { s.fullInsert = insertLedgerSQL(n) })
		return s.fullInsert
	}
	return insertLedgerSQL(n)
}
