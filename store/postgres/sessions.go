package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Sessions = (*Store)(nil)

// PutSession stores (or replaces) a session.
func (s *Store) PutSession(ctx context.Context, ses store.Session) error {
	if s.closed() {
		return store.ErrClosed
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO sessions (hash, admin_id, created_at, expires_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (hash) DO UPDATE SET admin_id = EXCLUDED.admin_id,
			created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`,
		ses.Hash, ses.AdminID, ses.CreatedAt.UTC(), ses.ExpiresAt.UTC())
	return wrapErr("put session", err)
}

// GetSession returns the unexpired session with that hash.
func (s *Store) GetSession(ctx context.Context, hash string, now time.Time) (store.Session, error) {
	if s.closed() {
		return store.Session{}, store.ErrClosed
	}
	ses := store.Session{Hash: hash}
	err := s.pool.QueryRow(ctx, `SELECT admin_id, created_at, expires_at FROM sessions
		WHERE hash = $1 AND expires_at > $2`, hash, now.UTC()).Scan(&ses.AdminID, &ses.CreatedAt, &ses.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, wrapErr("get session", err)
	}
	ses.CreatedAt, ses.ExpiresAt = ses.CreatedAt.UTC(), ses.ExpiresAt.UTC()
	return ses, nil
}

// DeleteSession removes the session with that hash.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	if s.closed() {
		return store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE hash = $1`, hash)
	if err != nil {
		return wrapErr("delete session", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// PurgeSessions removes the expired sessions.
func (s *Store) PurgeSessions(ctx context.Context, now time.Time) (int64, error) {
	if s.closed() {
		return 0, store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE expires_at <= $1`, now.UTC())
	if err != nil {
		return 0, wrapErr("purge sessions", err)
	}
	return tag.RowsAffected(), nil
}
