package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

func (s *Store) readRevision(ctx context.Context) (int64, error) {
	var rev int64
	db := s.r
	if db == nil { // during Open
		db = s.w
	}
	err := db.QueryRowContext(ctx, `SELECT value FROM meta WHERE name = 'revision'`).Scan(&rev)
	return rev, s.wrap("revision", err)
}

// Get returns one object or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, kind store.Kind, id string) (store.Object, error) {
	if err := s.check(); err != nil {
		return store.Object{}, err
	}
	obj := store.Object{Kind: kind, ID: id}
	var doc []byte
	var updated int64
	err := s.stmts.get.QueryRowContext(ctx, string(kind), id).Scan(&doc, &obj.Version, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Object{}, store.ErrNotFound
	}
	if err != nil {
		return store.Object{}, s.wrap("get", err)
	}
	obj.Doc, obj.UpdatedAt = doc, time.Unix(0, updated).UTC()
	return obj, nil
}

// List returns objects of a kind ordered by id, after `after`, at most limit (0: all).
func (s *Store) List(ctx context.Context, kind store.Kind, after string, limit int) ([]store.Object, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, doc, version, updated_ns FROM objects
		WHERE kind = ? AND id > ? ORDER BY id LIMIT ?`, string(kind), after, limit)
	if err != nil {
		return nil, s.wrap("list", err)
	}
	defer rows.Close()
	out := []store.Object{}
	for rows.Next() {
		obj := store.Object{Kind: kind}
		var updated int64
		if err := rows.Scan(&obj.ID, &obj.Doc, &obj.Version, &updated); err != nil {
			return nil, s.wrap("list", err)
		}
		obj.UpdatedAt = time.Unix(0, updated).UTC()
		out = append(out, obj)
	}
	return out, s.wrap("list", rows.Err())
}

// write runs f in one write transaction and, once it commits, announces the
// revision f returned to this process's watchers.
func (s *Store) write(ctx context.Context, op string, f func(tx *sql.Tx) (int64, error)) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	tx, err := s.w.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see dsn)
	if err != nil {
		return 0, s.wrap(op, err)
	}
	rev, err := f(tx)
	if err != nil {
		return 0, errors.Join(s.wrap(op, err), rollback(tx))
	}
	if err := tx.Commit(); err != nil {
		return 0, s.wrap(op, err)
	}
	s.rev.raise(rev)
	return rev, nil
}

func rollback(tx *sql.Tx) error {
	if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
		return err
	}
	return nil
}

func bump(ctx context.Context, tx *sql.Tx) (int64, error) {
	var rev int64
	err := tx.QueryRowContext(ctx, `UPDATE meta SET value = value + 1 WHERE name = 'revision' RETURNING value`).Scan(&rev)
	return rev, err
}

// Put creates or replaces an object (see store.Config.Put) and returns its new version.
func (s *Store) Put(ctx context.Context, obj store.Object, ifVersion int64) (int64, error) {
	if obj.Kind == "" || obj.ID == "" {
		return 0, fmt.Errorf("sqlite: put: kind and id are required")
	}
	return s.write(ctx, "put", func(tx *sql.Tx) (int64, error) {
		var cur int64
		err := tx.QueryRowContext(ctx, `SELECT version FROM objects WHERE kind = ? AND id = ?`,
			string(obj.Kind), obj.ID).Scan(&cur)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return 0, err
		}
		switch {
		case ifVersion == 0 && exists:
			return 0, store.ErrConflict
		case ifVersion > 0 && (!exists || cur != ifVersion):
			return 0, store.ErrConflict
		}
		rev, err := bump(ctx, tx)
		if err != nil {
			return 0, err
		}
		doc := []byte(obj.Doc)
		if doc == nil {
			doc = []byte{}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO objects (kind, id, doc, version, updated_ns) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (kind, id) DO UPDATE SET doc = excluded.doc, version = excluded.version, updated_ns = excluded.updated_ns`,
			string(obj.Kind), obj.ID, doc, rev, s.cfg.now().UnixNano())
		return rev, err
	})
}

// Delete removes an object; store.ErrNotFound if absent. It bumps the revision.
func (s *Store) Delete(ctx context.Context, kind store.Kind, id string) error {
	_, err := s.write(ctx, "delete", func(tx *sql.Tx) (int64, error) {
		res, err := tx.ExecContext(ctx, `DELETE FROM objects WHERE kind = ? AND id = ?`, string(kind), id)
		if err != nil {
			return 0, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return 0, errors.Join(store.ErrNotFound, err)
		}
		return bump(ctx, tx)
	})
	return err
}

// Revision is the store-wide revision: the highest version ever assigned.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	rev, err := s.readRevision(ctx)
	if err == nil {
		s.rev.raise(rev)
	}
	return rev, err
}
