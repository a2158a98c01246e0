package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-ai/tollgate/store"
)

// AppendAudit records one admin change; a zero At is the current time.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	if s.closed() {
		return store.ErrClosed
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO audit (at, actor, action, kind, target, detail)
		VALUES ($1, $2, $3, $4, $5, $6)`, e.At.UTC(), e.Actor, e.Action, string(e.Kind), e.Target, e.Detail)
	return wrapErr("append audit", err)
}

// ListAudit returns entries with ID > afterID, oldest first, at most limit (0: 100).
func (s *Store) ListAudit(ctx context.Context, afterID int64, limit int) ([]store.AuditEntry, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, actor, action, kind, target, detail FROM audit
		WHERE id > $1 ORDER BY id LIMIT $2`, afterID, limit)
	if err != nil {
		return nil, wrapErr("list audit", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.AuditEntry, error) {
		var e store.AuditEntry
		var kind string
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &kind, &e.Target, &e.Detail)
		e.Kind, e.At = store.Kind(kind), e.At.UTC()
		return e, err
	})
	if out == nil && err == nil {
		out = []store.AuditEntry{}
	}
	return out, wrapErr("list audit", err)
}
