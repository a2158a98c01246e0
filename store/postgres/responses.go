package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Responses = (*Store)(nil)

// PutResponse stores (or replaces) a response.
func (s *Store) PutResponse(ctx context.Context, r store.StoredResponse) error {
	if s.closed() {
		return store.ErrClosed
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO responses (key_id, id, response, input, created_at, expires_at, run)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (key_id, id) DO UPDATE SET response = EXCLUDED.response, input = EXCLUDED.input,
			created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at, run = EXCLUDED.run`,
		r.KeyID, r.ID, r.Response, r.Input, r.CreatedAt.UTC(), r.ExpiresAt.UTC(), r.Run)
	return wrapErr("put response", err)
}

// GetResponse returns the key's unexpired response.
func (s *Store) GetResponse(ctx context.Context, keyID, id string, now time.Time) (store.StoredResponse, error) {
	if s.closed() {
		return store.StoredResponse{}, store.ErrClosed
	}
	r := store.StoredResponse{KeyID: keyID, ID: id}
	err := s.pool.QueryRow(ctx, `SELECT response, input, run, created_at, expires_at FROM responses
		WHERE key_id = $1 AND id = $2 AND expires_at > $3`, keyID, id, now.UTC()).Scan(&r.Response, &r.Input, &r.Run, &r.CreatedAt, &r.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.StoredResponse{}, store.ErrNotFound
	}
	if err != nil {
		return store.StoredResponse{}, wrapErr("get response", err)
	}
	r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC()
	return r, nil
}

// DeleteResponse removes the key's response.
func (s *Store) DeleteResponse(ctx context.Context, keyID, id string) error {
	if s.closed() {
		return store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM responses WHERE key_id = $1 AND id = $2`, keyID, id)
	if err != nil {
		return wrapErr("delete response", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}

// PurgeResponses removes the expired responses.
func (s *Store) PurgeResponses(ctx context.Context, now time.Time) (int64, error) {
	if s.closed() {
		return 0, store.ErrClosed
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM response_owners WHERE expires_at <= $1`, now.UTC()); err != nil {
		return 0, wrapErr("purge response owners", err)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM responses WHERE expires_at <= $1`, now.UTC())
	if err != nil {
		return 0, wrapErr("purge responses", err)
	}
	return tag.RowsAffected(), nil
}
