package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tollgate-ai/tollgate/store"
)

// Get returns one object or store.ErrNotFound.
func (s *Store) Get(ctx context.Context, kind store.Kind, id string) (store.Object, error) {
	if s.closed() {
		return store.Object{}, store.ErrClosed
	}
	obj := store.Object{Kind: kind, ID: id}
	var doc []byte
	err := s.pool.QueryRow(ctx,
		`SELECT doc, version, updated_at FROM config_objects WHERE kind = $1 AND id = $2`,
		string(kind), id).Scan(&doc, &obj.Version, &obj.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Object{}, store.ErrNotFound
	}
	if err != nil {
		return store.Object{}, wrapErr("get", err)
	}
	obj.Doc = doc
	obj.UpdatedAt = obj.UpdatedAt.UTC()
	return obj, nil
}

// List returns objects of a kind ordered by id, after `after`, at most limit (0: all).
func (s *Store) List(ctx context.Context, kind store.Kind, after string, limit int) ([]store.Object, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	lim := int64(limit)
	if limit <= 0 {
		lim = -1
	}
	rows, err := s.pool.Query(ctx,
		`SELECT id, doc, version, updated_at FROM config_objects
		  WHERE kind = $1 AND id > $2 ORDER BY id COLLATE "C"
		  LIMIT CASE WHEN $3::bigint < 0 THEN NULL ELSE $3::bigint END`,
		string(kind), after, lim)
	if err != nil {
		return nil, wrapErr("list", err)
	}
	defer rows.Close()
	out := []store.Object{}
	for rows.Next() {
		obj := store.Object{Kind: kind}
		var doc []byte
		if err := rows.Scan(&obj.ID, &doc, &obj.Version, &obj.UpdatedAt); err != nil {
			return nil, wrapErr("list", err)
		}
		obj.Doc = doc
		obj.UpdatedAt = obj.UpdatedAt.UTC()
		out = append(out, obj)
	}
	return out, wrapErr("list", rows.Err())
}

// bumpRevision takes the revision row lock (serialising config writers, so
// revisions are assigned in commit order) and returns the new revision.
func bumpRevision(ctx context.Context, tx pgx.Tx) (int64, error) {
	var rev int64
	err := tx.QueryRow(ctx, `UPDATE config_revision SET value = value + 1 RETURNING value`).Scan(&rev)
	return rev, err
}

func notify(ctx context.Context, tx pgx.Tx, rev int64) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, strconv.FormatInt(rev, 10))
	return err
}

// Put creates or replaces an object (see store.Config.Put) and returns its new version.
func (s *Store) Put(ctx context.Context, obj store.Object, ifVersion int64) (int64, error) {
	if s.closed() {
		return 0, store.ErrClosed
	}
	var rev int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if rev, err = bumpRevision(ctx, tx); err != nil {
			return err
		}
		var tag pgconn.CommandTag
		now := time.Now().UTC()
		switch {
		case ifVersion < 0:
			tag, err = tx.Exec(ctx, `INSERT INTO config_objects (kind, id, doc, version, updated_at)
				VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (kind, id) DO UPDATE SET doc = EXCLUDED.doc, version = EXCLUDED.version,
				  updated_at = EXCLUDED.updated_at`,
				string(obj.Kind), obj.ID, []byte(obj.Doc), rev, now)
		case ifVersion == 0:
			tag, err = tx.Exec(ctx, `INSERT INTO config_objects (kind, id, doc, version, updated_at)
				VALUES ($1, $2, $3, $4, $5) ON CONFLICT (kind, id) DO NOTHING`,
				string(obj.Kind), obj.ID, []byte(obj.Doc), rev, now)
		default:
			tag, err = tx.Exec(ctx, `UPDATE config_objects SET doc = $3, version = $4, updated_at = $5
				WHERE kind = $1 AND id = $2 AND version = $6`,
				string(obj.Kind), obj.ID, []byte(obj.Doc), rev, now, ifVersion)
		}
		if err != nil {
			return err
		}
		if tag.RowsAffected() != 1 {
			return store.ErrConflict
		}
		return notify(ctx, tx, rev)
	})
	if err != nil {
		return 0, wrapErr("put", err)
	}
	return rev, nil
}

// Delete removes an object; store.ErrNotFound if absent. It bumps the revision.
func (s *Store) Delete(ctx context.Context, kind store.Kind, id string) error {
	if s.closed() {
		return store.ErrClosed
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rev, err := bumpRevision(ctx, tx)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM config_objects WHERE kind = $1 AND id = $2`, string(kind), id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrNotFound
		}
		return notify(ctx, tx, rev)
	})
	return wrapErr("delete", err)
}

// Revision is the store-wide revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	if s.closed() {
		return 0, store.ErrClosed
	}
	var rev int64
	err := s.pool.QueryRow(ctx, `SELECT value FROM config_revision`).Scan(&rev)
	return rev, wrapErr("revision", err)
}

// Watch sends the revision each time it changes, coalesced, until ctx ends. It
// LISTENs on a dedicated connection (changes from any replica arrive within
// milliseconds) and also polls every poll interval; while the LISTEN connection
// is down it polls every 250ms and reconnects, so a change is seen within one
// second either way.
func (s *Store) Watch(ctx context.Context) <-chan int64 {
	ch := make(chan int64, 1)
	// The baseline is the revision when Watch is called: any later change is sent.
	last, err := s.Revision(ctx)
	if err != nil {
		last = -1 // unknown: the first successful read is reported
	}
	go s.watch(ctx, ch, last)
	return ch
}

func (s *Store) watch(ctx context.Context, ch chan int64, last int64) {
	defer close(ch)
	send := func(rev int64) {
		if rev == last || rev < 0 {
			return
		}
		last = rev
		select {
		case <-ch:
		default:
		}
		ch <- rev
	}
	check := func() {
		if rev, err := s.Revision(ctx); err == nil {
			send(rev)
		}
	}
	const downPoll = 250 * time.Millisecond
	for ctx.Err() == nil && !s.closed() {
		conn, err := s.listen(ctx)
		if err != nil {
			s.opts.logger.Debug("postgres: watch: listen failed; polling", "err", err)
			check()
			sleep(ctx, downPoll)
			continue
		}
		check() // changes made while we were not listening
		for ctx.Err() == nil && !s.closed() {
			wctx, cancel := context.WithTimeout(ctx, s.opts.pollInterval)
			n, err := conn.WaitForNotification(wctx)
			cancel()
			if err == nil {
				if rev, perr := strconv.ParseInt(n.Payload, 10, 64); perr == nil && rev > last {
					send(rev)
				}
				continue
			}
			if ctx.Err() != nil {
				break
			}
			if wctx.Err() != nil && !conn.IsClosed() {
				check() // slow poll
				continue
			}
			break // connection lost: reconnect
		}
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = conn.Close(closeCtx)
		cancel()
	}
}

func (s *Store) listen(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+notifyChannel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
