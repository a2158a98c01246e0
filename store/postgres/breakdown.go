package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

var _ store.SpendByScope = (*Store)(nil)

// SeriesByScope is the spend of every scope of a kind per bucket: one query
// on the (scope_kind, hour) index of the hourly totals.
func (s *Store) SeriesByScope(ctx context.Context, kind kernel.ScopeKind, since, until time.Time, step time.Duration) (map[string][]store.SpendPoint, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	if step < time.Hour || step%time.Hour != 0 {
		return nil, fmt.Errorf("postgres: series by scope: step %s is not a multiple of an hour", step)
	}
	out := map[string][]store.SpendPoint{}
	if !until.After(since) {
		return out, nil
	}
	lo, hi := store.HourRange(since, until)
	rows, err := s.pool.Query(ctx, `SELECT scope_id, hour, cost, requests, tokens, cache_hits, cache_misses, cache_saved
		FROM spend_hourly WHERE scope_kind = $1 AND hour >= $2 AND hour < $3`, int16(kind), lo, hi)
	if err != nil {
		return nil, wrapErr("series by scope", err)
	}
	defer rows.Close()
	buckets := map[string]*store.SeriesBuckets{}
	for rows.Next() {
		var id string
		var hour int64
		var t store.SpendPoint
		if err := rows.Scan(&id, &hour, &t.Cost, &t.Requests, &t.Tokens, &t.Cache.Hits, &t.Cache.Misses, &t.Cache.Saved); err != nil {
			return nil, wrapErr("series by scope", err)
		}
		sb, ok := buckets[id]
		if !ok {
			sb = store.NewSeriesBuckets(since, until, step)
			buckets[id] = sb
		}
		sb.Add(hour, t)
	}
	for id, sb := range buckets {
		out[id] = sb.Points()
	}
	return out, wrapErr("series by scope", rows.Err())
}
