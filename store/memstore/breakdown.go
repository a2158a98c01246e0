package memstore

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

var _ store.SpendByScope = (*Store)(nil)

// SeriesByScope is the spend of every scope of a kind per bucket.
func (s *Store) SeriesByScope(_ context.Context, kind kernel.ScopeKind, since, until time.Time, step time.Duration) (map[string][]store.SpendPoint, error) {
	if step < time.Hour || step%time.Hour != 0 {
		return nil, fmt.Errorf("memstore: series by scope: step %s is not a multiple of an hour", step)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	out := map[string][]store.SpendPoint{}
	if !until.After(since) {
		return out, nil
	}
	buckets := map[string]*store.SeriesBuckets{}
	lo, hi := store.HourRange(since, until)
	for k, b := range s.totals {
		if k.kind != kind || k.hour < lo || k.hour >= hi {
			continue
		}
		sb, ok := buckets[k.id]
		if !ok {
			sb = store.NewSeriesBuckets(since, until, step)
			buckets[k.id] = sb
		}
		sb.Add(k.hour, *b)
	}
	for id, sb := range buckets {
		out[id] = sb.Points()
	}
	return out, nil
}
