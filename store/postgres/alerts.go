package postgres

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Alerts = (*Store)(nil)

// ClaimAlert records a fired alert unless its id is recorded already.
func (s *Store) ClaimAlert(ctx context.Context, a store.AlertRecord) (bool, error) {
	if s.closed() {
		return false, store.ErrClosed
	}
	if a.FiredAt.IsZero() {
		a.FiredAt = time.Now()
	}
	tag, err := s.pool.Exec(ctx, `INSERT INTO alerts (id, kind, scope_kind, scope_id, message, detail, fired_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
		a.ID, a.Kind, a.Scope.Kind.String(), a.Scope.ID, a.Message, a.Detail, a.FiredAt.UTC())
	if err != nil {
		return false, wrapErr("claim alert", err)
	}
	return tag.RowsAffected() == 1, nil
}

// RecordAlertDelivery records the state of an alert's delivery to a sink.
func (s *Store) RecordAlertDelivery(ctx context.Context, d store.AlertDelivery) error {
	if s.closed() {
		return store.ErrClosed
	}
	if d.At.IsZero() {
		d.At = time.Now()
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO alert_deliveries (alert_id, sink, attempts, ok, error, at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (alert_id, sink) DO UPDATE SET
		attempts = excluded.attempts, ok = excluded.ok, error = excluded.error, at = excluded.at`,
		d.AlertID, d.Sink, d.Attempts, d.OK, d.Error, d.At.UTC())
	return wrapErr("record alert delivery", err)
}

// ListAlerts returns the latest alerts, newest first, with their deliveries.
func (s *Store) ListAlerts(ctx context.Context, limit int) ([]store.AlertRecord, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.pool.Query(ctx, `SELECT id, kind, scope_kind, scope_id, message, detail, fired_at FROM alerts
		ORDER BY fired_at DESC, id LIMIT $1`, limit)
	if err != nil {
		return nil, wrapErr("list alerts", err)
	}
	out := []store.AlertRecord{}
	at := map[string]int{}
	for rows.Next() {
		var a store.AlertRecord
		var kind string
		if err := rows.Scan(&a.ID, &a.Kind, &kind, &a.Scope.ID, &a.Message, &a.Detail, &a.FiredAt); err != nil {
			rows.Close()
			return nil, wrapErr("list alerts", err)
		}
		a.Scope.Kind, _ = kernel.ParseScopeKind(kind)
		a.FiredAt = a.FiredAt.UTC()
		at[a.ID] = len(out)
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, wrapErr("list alerts", err)
	}
	drows, err := s.pool.Query(ctx, `SELECT d.alert_id, d.sink, d.attempts, d.ok, d.error, d.at
		FROM alert_deliveries d JOIN alerts a ON a.id = d.alert_id WHERE a.fired_at >= $1 ORDER BY d.alert_id, d.sink`,
		out[len(out)-1].FiredAt)
	if err != nil {
		return nil, wrapErr("list alert deliveries", err)
	}
	defer drows.Close()
	for drows.Next() {
		var d store.AlertDelivery
		if err := drows.Scan(&d.AlertID, &d.Sink, &d.Attempts, &d.OK, &d.Error, &d.At); err != nil {
			return nil, wrapErr("list alert deliveries", err)
		}
		d.At = d.At.UTC()
		if i, ok := at[d.AlertID]; ok {
			out[i].Deliveries = append(out[i].Deliveries, d)
		}
	}
	return out, wrapErr("list alert deliveries", drows.Err())
}
