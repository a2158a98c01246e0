package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Sessions = (*Store)(nil)

// PutSession stores (or replaces) a session.
func (s *Store) PutSession(ctx context.Context, ses store.Session) error {
	if err := s.check(); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, `INSERT OR REPLACE INTO sessions (hash, admin_id, created_ns, expires_ns)
		VALUES (?, ?, ?, ?)`, ses.Hash, ses.AdminID, ses.CreatedAt.UnixNano(), ses.ExpiresAt.UnixNano())
	return s.wrap("put session", err)
}

// GetSession returns the unexpired session with that hash.
func (s *Store) GetSession(ctx context.Context, hash string, now time.Time) (store.Session, error) {
	if err := s.check(); err != nil {
		return store.Session{}, err
	}
	ses := store.Session{Hash: hash}
	var created, expires int64
	err := s.r.QueryRowContext(ctx, `SELECT admin_id, created_ns, expires_ns FROM sessions
		WHERE hash = ? AND expires_ns > ?`, hash, now.UnixNano()).Scan(&ses.AdminID, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, store.ErrNotFound
	}
	if err != nil {
		return store.Session{}, s.wrap("get session", err)
	}
	ses.CreatedAt, ses.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return ses, nil
}

// DeleteSession removes the session with that hash.
func (s *Store) DeleteSession(ctx context.Context, hash string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE hash = ?`, hash)
	if err != nil {
		return s.wrap("delete session", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// PurgeSessions removes the expired sessions.
func (s *Store) PurgeSessions(ctx context.Context, now time.Time) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE expires_ns <= ?`, now.UnixNano())
	if err != nil {
		return 0, s.wrap("purge sessions", err)
	}
	n, err := res.RowsAffected()
	return n, s.wrap("purge sessions", err)
}
