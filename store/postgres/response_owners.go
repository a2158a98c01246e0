package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.ResponseOwners = (*Store)(nil)

// insertOwners writes the owners the batch's entries carry, in the ledger's
// transaction; the first owner of an id stays.
func insertOwners(ctx context.Context, tx pgx.Tx, batch []store.LedgerEntry) error {
	var ids, keys, deps, models []string
	var st, bg []bool
	var created, expires []time.Time
	for i := range batch {
		o := batch[i].Owner
		if o == nil {
			continue
		}
		ids, keys, deps, models = append(ids, o.ID), append(keys, o.KeyID), append(deps, o.Deployment), append(models, o.Model)
		st, bg = append(st, o.Store), append(bg, o.Background)
		created, expires = append(created, o.CreatedAt.UTC()), append(expires, o.ExpiresAt.UTC())
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO response_owners (id, key_id, deployment, model, store, background, created_at, expires_at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bool[], $6::bool[],
		  $7::timestamptz[], $8::timestamptz[])
		ON CONFLICT (id) DO NOTHING`, ids, keys, deps, models, st, bg, created, expires)
	return err
}

// GetResponseOwner returns the owner of an unexpired native response id.
func (s *Store) GetResponseOwner(ctx context.Context, id string, now time.Time) (store.ResponseOwner, error) {
	if s.closed() {
		return store.ResponseOwner{}, store.ErrClosed
	}
	o := store.ResponseOwner{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT key_id, deployment, model, store, background, created_at, expires_at
		FROM response_owners WHERE id = $1 AND expires_at > $2`, id, now.UTC()).
		Scan(&o.KeyID, &o.Deployment, &o.Model, &o.Store, &o.Background, &o.CreatedAt, &o.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ResponseOwner{}, store.ErrNotFound
	}
	if err != nil {
		return store.ResponseOwner{}, wrapErr("get response owner", err)
	}
	o.CreatedAt, o.ExpiresAt = o.CreatedAt.UTC(), o.ExpiresAt.UTC()
	return o, nil
}

// DeleteResponseOwner forgets a native response id.
func (s *Store) DeleteResponseOwner(ctx context.Context, id string) error {
	if s.closed() {
		return store.ErrClosed
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM response_owners WHERE id = $1`, id)
	if err != nil {
		return wrapErr("delete response owner", err)
	}
	if tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return nil
}
