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
	var ids, keys, deps, models, runs []string
	var st, bg []bool
	var created, expires []time.Time
	for i := range batch {
		o := batch[i].Owner
		if o == nil {
			continue
		}
		ids, keys, deps, models = append(ids, o.ID), append(keys, o.KeyID), append(deps, o.Deployment), append(models, o.Model)
		runs = append(runs, o.Run)
		st, bg = append(st, o.Store), append(bg, o.Background)
		created, expires = append(created, o.CreatedAt.UTC()), append(expires, o.ExpiresAt.UTC())
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO response_owners (id, key_id, deployment, model, store, background, created_at, expires_at, run)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bool[], $6::bool[],
		  $7::timestamptz[], $8::timestamptz[], $9::text[])
		ON CONFLICT (id) DO NOTHING`, ids, keys, deps, models, st, bg, created, expires, runs)
	return err
}

// GetResponseOwner returns the owner of an unexpired native response id.
func (s *Store) GetResponseOwner(ctx context.Context, id string, now time.Time) (store.ResponseOwner, error) {
	if s.closed() {
		return store.ResponseOwner{}, store.ErrClosed
	}
	o := store.ResponseOwner{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT key_id, deployment, model, store, background, run, created_at, expires_at, pending
		FROM response_owners WHERE id = $1 AND expires_at > $2`, id, now.UTC()).
		Scan(&o.KeyID, &o.Deployment, &o.Model, &o.Store, &o.Background, &o.Run, &o.CreatedAt, &o.ExpiresAt, &o.Pending)
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

// PutResponseOwner records an owner at once, with its pending settlement;
// the first owner of an id stays.
func (s *Store) PutResponseOwner(ctx context.Context, o store.ResponseOwner) error {
	if s.closed() {
		return store.ErrClosed
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO response_owners (id, key_id, deployment, model, store, background, created_at, expires_at, pending, run)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING`,
		o.ID, o.KeyID, o.Deployment, o.Model, o.Store, o.Background, o.CreatedAt.UTC(), o.ExpiresAt.UTC(), o.Pending, o.Run)
	if err != nil {
		return wrapErr("put response owner", err)
	}
	return nil
}

// ClaimResponseSettlement takes an id's pending settlement and clears it:
// the row lock of SELECT … FOR UPDATE lets one claim through (the others
// read it cleared once the first commits).
func (s *Store) ClaimResponseSettlement(ctx context.Context, id string) ([]byte, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	var p []byte
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT pending FROM response_owners WHERE id = $1 AND pending IS NOT NULL FOR UPDATE`, id).Scan(&p)
		if err != nil {
			return err
		}
		if p == nil { // cleared while this claim waited for the lock
			return pgx.ErrNoRows
		}
		_, err = tx.Exec(ctx, `UPDATE response_owners SET pending = NULL WHERE id = $1`, id)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, wrapErr("claim response settlement", err)
	}
	return p, nil
}

// PendingResponseOwners lists the owners with a pending settlement, oldest
// first (the partial index of migration 00013 keeps it a short read).
func (s *Store) PendingResponseOwners(ctx context.Context) ([]store.ResponseOwner, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	rows, err := s.pool.Query(ctx, `SELECT id, key_id, deployment, model, store, background, run, created_at, expires_at, pending
		FROM response_owners WHERE pending IS NOT NULL ORDER BY created_at, id`)
	if err != nil {
		return nil, wrapErr("pending response owners", err)
	}
	defer rows.Close()
	var out []store.ResponseOwner
	for rows.Next() {
		var o store.ResponseOwner
		if err := rows.Scan(&o.ID, &o.KeyID, &o.Deployment, &o.Model, &o.Store, &o.Background, &o.Run, &o.CreatedAt, &o.ExpiresAt, &o.Pending); err != nil {
			return nil, wrapErr("pending response owners", err)
		}
		o.CreatedAt, o.ExpiresAt = o.CreatedAt.UTC(), o.ExpiresAt.UTC()
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, wrapErr("pending response owners", err)
	}
	return out, nil
}
