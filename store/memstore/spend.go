package memstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// ScopeSpend is the cost charged to a scope for requests that ended in
// [since, until), at hourly resolution.
func (s *Store) ScopeSpend(_ context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	lo, hi := store.HourRange(since, until)
	var total kernel.Money
	for k, b := range s.totals {
		if k.kind == scope.Kind && k.id == scope.ID && k.hour >= lo && k.hour < hi {
			total += b.Cost
		}
	}
	return total, nil
}

// Series is the spend of a scope per bucket of step (a multiple of an hour)
// over [since, until), buckets aligned to since; empty buckets are included.
func (s *Store) Series(_ context.Context, scope kernel.ScopeRef, since, until time.Time, step time.Duration) ([]store.SpendPoint, error) {
	if step < time.Hour || step%time.Hour != 0 {
		return nil, fmt.Errorf("memstore: series: step %s is not a multiple of an hour", step)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if !until.After(since) {
		return []store.SpendPoint{}, nil
	}
	out := store.NewSeriesBuckets(since, until, step)
	lo, hi := store.HourRange(since, until)
	for k, b := range s.totals {
		if k.kind == scope.Kind && k.id == scope.ID && k.hour >= lo && k.hour < hi {
			out.Add(k.hour, *b)
		}
	}
	return out.Points(), nil
}

// Entries lists ledger rows ordered by (EndedAt, RequestID).
func (s *Store) Entries(_ context.Context, f store.LedgerFilter) ([]store.LedgerEntry, error) {
	s.mu.Lock() // sorts the rows appended since the last call
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if s.dirty {
		slices.SortFunc(s.rows, compareRows)
		s.dirty = false
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	start := 0
	if f.After != "" {
		if _, ok := s.ledger[f.After]; !ok {
			return []store.LedgerEntry{}, nil
		}
		i := slices.IndexFunc(s.rows, func(e store.LedgerEntry) bool { return e.RequestID == f.After })
		start = i + 1
	}
	out := []store.LedgerEntry{}
	for _, e := range s.rows[start:] {
		if len(out) == limit {
			break
		}
		if matches(&e, &f) {
			out = append(out, e)
		}
	}
	return out, nil
}

func matches(e *store.LedgerEntry, f *store.LedgerFilter) bool {
	if f.Model != "" && e.Model != f.Model {
		return false
	}
	if !f.Since.IsZero() && e.EndedAt.Before(f.Since) {
		return false
	}
	if !f.Until.IsZero() && !e.EndedAt.Before(f.Until) {
		return false
	}
	if f.Scope == nil {
		return true
	}
	return slices.Contains(e.Scopes(), *f.Scope)
}
