package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Responses = (*Store)(nil)

// PutResponse stores (or replaces) a response.
func (s *Store) PutResponse(ctx context.Context, r store.StoredResponse) error {
	if err := s.check(); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, `INSERT OR REPLACE INTO responses (key_id, id, response, input, run, created_ns, expires_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, r.KeyID, r.ID, r.Response, r.Input, r.Run, r.CreatedAt.UnixNano(), r.ExpiresAt.UnixNano())
	return s.wrap("put response", err)
}

// GetResponse returns the key's unexpired response.
func (s *Store) GetResponse(ctx context.Context, keyID, id string, now time.Time) (store.StoredResponse, error) {
	if err := s.check(); err != nil {
		return store.StoredResponse{}, err
	}
	r := store.StoredResponse{KeyID: keyID, ID: id}
	var created, expires int64
	err := s.r.QueryRowContext(ctx, `SELECT response, input, run, created_ns, expires_ns FROM responses
		WHERE key_id = ? AND id = ? AND expires_ns > ?`, keyID, id, now.UnixNano()).Scan(&r.Response, &r.Input, &r.Run, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return store.StoredResponse{}, store.ErrNotFound
	}
	if err != nil {
		return store.StoredResponse{}, s.wrap("get response", err)
	}
	r.CreatedAt, r.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return r, nil
}

// DeleteResponse removes the key's response.
func (s *Store) DeleteResponse(ctx context.Context, keyID, id string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM responses WHERE key_id = ? AND id = ?`, keyID, id)
	if err != nil {
		return s.wrap("delete response", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// PurgeResponses removes the expired responses.
func (s *Store) PurgeResponses(ctx context.Context, now time.Time) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if _, err := s.w.ExecContext(ctx, `DELETE FROM response_owners WHERE expires_ns <= ?`, now.UnixNano()); err != nil {
		return 0, s.wrap("purge response owners", err)
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM responses WHERE expires_ns <= ?`, now.UnixNano())
	if err != nil {
		return 0, s.wrap("purge responses", err)
	}
	n, err := res.RowsAffected()
	return n, s.wrap("purge responses", err)
}
