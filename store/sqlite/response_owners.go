package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.ResponseOwners = (*Store)(nil)

// insertOwnerSQL records a native response id; the first owner of an id
// stays (a retried batch, a repeated entry).
const insertOwnerSQL = `INSERT INTO response_owners (id, key_id, deployment, model, store, background, created_ns, expires_ns, run)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`

// insertOwners writes the owners the batch's entries carry, in the ledger's
// transaction.
func (w *ledgerWriter) insertOwners(ctx context.Context, batch []store.LedgerEntry) error {
	for i := range batch {
		o := batch[i].Owner
		if o == nil {
			continue
		}
		a := w.argSlice(9)
		a[0].Value, a[1].Value, a[2].Value, a[3].Value = o.ID, w.box(o.KeyID), w.box(o.Deployment), w.box(o.Model)
		a[4].Value, a[5].Value = b2i(o.Store), b2i(o.Background)
		a[6].Value, a[7].Value, a[8].Value = o.CreatedAt.UnixNano(), o.ExpiresAt.UnixNano(), o.Run
		if _, err := w.exec(ctx, w.owner, a); err != nil {
			return err
		}
	}
	return nil
}

// GetResponseOwner returns the owner of an unexpired native response id.
func (s *Store) GetResponseOwner(ctx context.Context, id string, now time.Time) (store.ResponseOwner, error) {
	if err := s.check(); err != nil {
		return store.ResponseOwner{}, err
	}
	o := store.ResponseOwner{ID: id}
	var st, bg, created, expires int64
	err := s.r.QueryRowContext(ctx, `SELECT key_id, deployment, model, store, background, run, created_ns, expires_ns, pending
		FROM response_owners WHERE id = ? AND expires_ns > ?`, id, now.UnixNano()).
		Scan(&o.KeyID, &o.Deployment, &o.Model, &st, &bg, &o.Run, &created, &expires, &o.Pending)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ResponseOwner{}, store.ErrNotFound
	}
	if err != nil {
		return store.ResponseOwner{}, s.wrap("get response owner", err)
	}
	o.Store, o.Background = st != 0, bg != 0
	o.CreatedAt, o.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
	return o, nil
}

// DeleteResponseOwner forgets a native response id.
func (s *Store) DeleteResponseOwner(ctx context.Context, id string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM response_owners WHERE id = ?`, id)
	if err != nil {
		return s.wrap("delete response owner", err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return store.ErrNotFound
	}
	return nil
}

// PutResponseOwner records an owner at once, with its pending settlement;
// the first owner of an id stays.
func (s *Store) PutResponseOwner(ctx context.Context, o store.ResponseOwner) error {
	if err := s.check(); err != nil {
		return err
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO response_owners (id, key_id, deployment, model, store, background, run, created_ns, expires_ns, pending)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		o.ID, o.KeyID, o.Deployment, o.Model, b2i(o.Store), b2i(o.Background), o.Run, o.CreatedAt.UnixNano(), o.ExpiresAt.UnixNano(), o.Pending)
	return s.wrap("put response owner", err)
}

// ClaimResponseSettlement takes an id's pending settlement and clears it in
// one transaction on the single writer: one claim gets it.
func (s *Store) ClaimResponseSettlement(ctx context.Context, id string) ([]byte, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	tx, err := s.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see dsn)
	if err != nil {
		return nil, s.wrap("claim response settlement", err)
	}
	defer func() { _ = tx.Rollback() }()
	var p []byte
	err = tx.QueryRowContext(ctx, `SELECT pending FROM response_owners WHERE id = ? AND pending IS NOT NULL`, id).Scan(&p)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, `UPDATE response_owners SET pending = NULL WHERE id = ?`, id)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return nil, s.wrap("claim response settlement", err)
	}
	return p, nil
}

// PendingResponseOwners lists the owners with a pending settlement, oldest
// first (the partial index of migration 00013 keeps it a short read).
func (s *Store) PendingResponseOwners(ctx context.Context) ([]store.ResponseOwner, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, key_id, deployment, model, store, background, run, created_ns, expires_ns, pending
		FROM response_owners WHERE pending IS NOT NULL ORDER BY created_ns, id`)
	if err != nil {
		return nil, s.wrap("pending response owners", err)
	}
	defer rows.Close()
	var out []store.ResponseOwner
	for rows.Next() {
		var o store.ResponseOwner
		var st, bg, created, expires int64
		if err := rows.Scan(&o.ID, &o.KeyID, &o.Deployment, &o.Model, &st, &bg, &o.Run, &created, &expires, &o.Pending); err != nil {
			return nil, s.wrap("pending response owners", err)
		}
		o.Store, o.Background = st != 0, bg != 0
		o.CreatedAt, o.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
		out = append(out, o)
	}
	return out, s.wrap("pending response owners", rows.Err())
}
