package sqlite

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

// AppendAudit records one admin change; a zero At is the current time.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	if err := s.check(); err != nil {
		return err
	}
	if e.At.IsZero() {
		e.At = s.cfg.now()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO audit (at_ns, actor, action, kind, target, detail) VALUES (?, ?, ?, ?, ?, ?)`,
		e.At.UnixNano(), e.Actor, e.Action, string(e.Kind), e.Target, e.Detail)
	return s.wrap("append audit", err)
}

// ListAudit returns entries with ID > afterID, oldest first, at most limit (0: 100).
func (s *Store) ListAudit(ctx context.Context, afterID int64, limit int) ([]store.AuditEntry, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, at_ns, actor, action, kind, target, detail FROM audit
		WHERE id > ? ORDER BY id LIMIT ?`, afterID, limit)
	if err != nil {
		return nil, s.wrap("list audit", err)
	}
	defer rows.Close()
	out := []store.AuditEntry{}
	for rows.Next() {
		var e store.AuditEntry
		var at int64
		var kind string
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Action, &kind, &e.Target, &e.Detail); err != nil {
			return nil, s.wrap("list audit", err)
		}
		e.At, e.Kind = time.Unix(0, at).UTC(), store.Kind(kind)
		out = append(out, e)
	}
	return out, s.wrap("list audit", rows.Err())
}
