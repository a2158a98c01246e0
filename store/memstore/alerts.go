package memstore

import (
	"cmp"
	"context"
	"slices"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Alerts = (*Store)(nil)

// ClaimAlert records a fired alert unless its id is recorded already.
func (s *Store) ClaimAlert(_ context.Context, a store.AlertRecord) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, store.ErrClosed
	}
	if s.alerts == nil {
		s.alerts = map[string]*store.AlertRecord{}
	}
	if _, ok := s.alerts[a.ID]; ok {
		return false, nil
	}
	if a.FiredAt.IsZero() {
		a.FiredAt = s.now()
	}
	a.FiredAt = a.FiredAt.UTC().Round(0)
	a.Deliveries = nil
	s.alerts[a.ID] = &a
	return true, nil
}

// RecordAlertDelivery records the state of an alert's delivery to a sink.
func (s *Store) RecordAlertDelivery(_ context.Context, d store.AlertDelivery) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	a, ok := s.alerts[d.AlertID]
	if !ok {
		return nil // as the SQL backends' rows without their alert: never listed
	}
	if d.At.IsZero() {
		d.At = s.now()
	}
	d.At = d.At.UTC().Round(0)
	i, found := slices.BinarySearchFunc(a.Deliveries, d.Sink, func(x store.AlertDelivery, sink string) int { return cmp.Compare(x.Sink, sink) })
	if found {
		a.Deliveries[i] = d
	} else {
		a.Deliveries = slices.Insert(a.Deliveries, i, d)
	}
	return nil
}

// ListAlerts returns the latest alerts, newest first, with their deliveries.
func (s *Store) ListAlerts(_ context.Context, limit int) ([]store.AlertRecord, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	out := make([]store.AlertRecord, 0, len(s.alerts))
	for _, a := range s.alerts {
		c := *a
		c.Deliveries = slices.Clone(a.Deliveries)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b store.AlertRecord) int {
		return cmp.Or(b.FiredAt.Compare(a.FiredAt), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(limit, len(out))], nil
}
