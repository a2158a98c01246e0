package sqlite

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Alerts = (*Store)(nil)

// ClaimAlert records a fired alert unless its id is recorded already.
func (s *Store) ClaimAlert(ctx context.Context, a store.AlertRecord) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	if a.FiredAt.IsZero() {
		a.FiredAt = s.cfg.now()
	}
	res, err := s.w.ExecContext(ctx, `INSERT INTO alerts (id, kind, scope_kind, scope_id, message, detail, fired_ns)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		a.ID, a.Kind, a.Scope.Kind.String(), a.Scope.ID, a.Message, a.Detail, a.FiredAt.UnixNano())
	if err != nil {
		return false, s.wrap("claim alert", err)
	}
	n, err := res.RowsAffected()
	return n == 1, s.wrap("claim alert", err)
}

// RecordAlertDelivery records the state of an alert's delivery to a sink.
func (s *Store) RecordAlertDelivery(ctx context.Context, d store.AlertDelivery) error {
	if err := s.check(); err != nil {
		return err
	}
	if d.At.IsZero() {
		d.At = s.cfg.now()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO alert_deliveries (alert_id, sink, attempts, ok, error, at_ns)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (alert_id, sink) DO UPDATE SET
		attempts = excluded.attempts, ok = excluded.ok, error = excluded.error, at_ns = excluded.at_ns`,
		d.AlertID, d.Sink, d.Attempts, d.OK, d.Error, d.At.UnixNano())
	return s.wrap("record alert delivery", err)
}

// ListAlerts returns the latest alerts, newest first, with their deliveries.
func (s *Store) ListAlerts(ctx context.Context, limit int) ([]store.AlertRecord, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, kind, scope_kind, scope_id, message, detail, fired_ns FROM alerts
		ORDER BY fired_ns DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, s.wrap("list alerts", err)
	}
	out := []store.AlertRecord{}
	at := map[string]int{}
	for rows.Next() {
		var a store.AlertRecord
		var kind string
		var fired int64
		if err := rows.Scan(&a.ID, &a.Kind, &kind, &a.Scope.ID, &a.Message, &a.Detail, &fired); err != nil {
			rows.Close()
			return nil, s.wrap("list alerts", err)
		}
		a.Scope.Kind, _ = kernel.ParseScopeKind(kind)
		a.FiredAt = time.Unix(0, fired).UTC()
		at[a.ID] = len(out)
		out = append(out, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(out) == 0 {
		return out, s.wrap("list alerts", err)
	}
	oldest := out[len(out)-1].FiredAt.UnixNano()
	drows, err := s.r.QueryContext(ctx, `SELECT d.alert_id, d.sink, d.attempts, d.ok, d.error, d.at_ns
		FROM alert_deliveries d JOIN alerts a ON a.id = d.alert_id WHERE a.fired_ns >= ? ORDER BY d.alert_id, d.sink`, oldest)
	if err != nil {
		return nil, s.wrap("list alert deliveries", err)
	}
	defer drows.Close()
	for drows.Next() {
		var d store.AlertDelivery
		var ns int64
		if err := drows.Scan(&d.AlertID, &d.Sink, &d.Attempts, &d.OK, &d.Error, &ns); err != nil {
			return nil, s.wrap("list alert deliveries", err)
		}
		d.At = time.Unix(0, ns).UTC()
		if i, ok := at[d.AlertID]; ok {
			out[i].Deliveries = append(out[i].Deliveries, d)
		}
	}
	return out, s.wrap("list alert deliveries", drows.Err())
}
