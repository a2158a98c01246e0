package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// ScopeSpend is the cost charged to a scope for requests that ended in
// [since, until), at hourly resolution.
func (s *Store) ScopeSpend(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	lo, hi := store.HourRange(since, until)
	var total int64
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(cost), 0) FROM spend_hourly
		WHERE scope_kind = ? AND scope_id = ? AND hour >= ? AND hour < ?`,
		int64(scope.Kind), scope.ID, lo, hi).Scan(&total)
	return kernel.Money(total), s.wrap("scope spend", err)
}

// Series is the spend of a scope per bucket of step (a multiple of an hour)
// over [since, until), buckets aligned to since; empty buckets are included.
func (s *Store) Series(ctx context.Context, scope kernel.ScopeRef, since, until time.Time, step time.Duration) ([]store.SpendPoint, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if step < time.Hour || step%time.Hour != 0 {
		return nil, fmt.Errorf("sqlite: series: step %s is not a multiple of an hour", step)
	}
	if !until.After(since) {
		return []store.SpendPoint{}, nil
	}
	lo, hi := store.HourRange(since, until)
	rows, err := s.r.QueryContext(ctx, `SELECT hour, cost, requests, tokens, cache_hits, cache_misses, cache_saved
		FROM spend_hourly WHERE scope_kind = ? AND scope_id = ? AND hour >= ? AND hour < ?`, int64(scope.Kind), scope.ID, lo, hi)
	if err != nil {
		return nil, s.wrap("series", err)
	}
	defer rows.Close()
	out := store.NewSeriesBuckets(since, until, step)
	for rows.Next() {
		var hour int64
		var t store.SpendPoint
		if err := rows.Scan(&hour, &t.Cost, &t.Requests, &t.Tokens, &t.Cache.Hits, &t.Cache.Misses, &t.Cache.Saved); err != nil {
			return nil, s.wrap("series", err)
		}
		out.Add(hour, t)
	}
	return out.Points(), s.wrap("series", rows.Err())
}

var scopeColumn = map[kernel.ScopeKind]string{
	kernel.ScopeOrg: "org_id", kernel.ScopeTeam: "team_id", kernel.ScopeUser: "user_id",
	kernel.ScopeCustomer: "customer_id", kernel.ScopeKey: "key_id", kernel.ScopeRun: "run_id",
}

// Entries lists ledger rows ordered by (EndedAt, RequestID).
func (s *Store) Entries(ctx context.Context, f store.LedgerFilter) ([]store.LedgerEntry, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	if f.Scope != nil && f.Scope.Kind == kernel.ScopeTag { // tags: "a=1,b=2"
		where, args = append(where, "instr(',' || tags || ',', ',' || ? || ',') > 0"), append(args, f.Scope.ID)
	} else if f.Scope != nil && f.Scope.Kind != kernel.ScopeGlobal {
		col, ok := scopeColumn[f.Scope.Kind]
		if !ok {
			return nil, fmt.Errorf("sqlite: entries: unknown scope kind %d", f.Scope.Kind)
		}
		if f.Scope.ID == "" {
			return []store.LedgerEntry{}, nil // entries are charged only to named scopes
		}
		where, args = append(where, col+" = ?"), append(args, f.Scope.ID)
	}
	if f.Model != "" {
		where, args = append(where, "model = ?"), append(args, f.Model)
	}
	if !f.Since.IsZero() {
		where, args = append(where, "ended_ns >= ?"), append(args, f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		where, args = append(where, "ended_ns < ?"), append(args, f.Until.UnixNano())
	}
	if f.After != "" {
		where = append(where, "(ended_ns, request_id) > ((SELECT ended_ns FROM ledger WHERE request_id = ?), ?)")
		args = append(args, f.After, f.After)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT ` + ledgerColumns + ` FROM ledger`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY ended_ns, request_id LIMIT ?`
	args = append(args, limit)
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.wrap("entries", err)
	}
	defer rows.Close()
	out := []store.LedgerEntry{}
	for rows.Next() {
		var e store.LedgerEntry
		var status, stream, started, ended, unpriced int64
		var run, requested, unit, tags sql.NullString
		var quantity, cacheResult, cacheSaved sql.NullInt64
		if err := rows.Scan(&e.RequestID, &e.KeyID, &e.UserID, &e.TeamID, &e.OrgID, &e.CustomerID, &e.Model,
			&e.Deployment, &e.Usage.Input, &e.Usage.CachedInput, &e.Usage.CacheWrite, &e.Usage.Output,
			&e.Usage.Reasoning, &e.Cost, &status, &e.HTTPStatus, &stream, &started, &ended, &unpriced, &run, &requested, &unit, &quantity,
			&cacheResult, &cacheSaved, &tags); err != nil {
			return nil, s.wrap("entries", err)
		}
		e.Cache, e.CacheSaved = store.CacheResult(cacheResult.Int64), kernel.Money(cacheSaved.Int64)
		e.RunID, e.RequestedModel = run.String, requested.String
		e.Unit, e.Quantity = kernel.Unit(unit.String), quantity.Int64
		if tags.String != "" {
			e.Tags = strings.Split(tags.String, ",")
		}
		e.Status, e.Stream, e.Unpriced = kernel.Status(status), stream != 0, unpriced != 0
		e.StartedAt, e.EndedAt = time.Unix(0, started).UTC(), time.Unix(0, ended).UTC()
		out = append(out, e)
	}
	return out, s.wrap("entries", rows.Err())
}
