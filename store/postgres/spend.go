package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// ScopeSpend is the total cost charged to a scope for requests that ended in
// [since, until), at hourly resolution.
func (s *Store) ScopeSpend(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
	if s.closed() {
		return 0, store.ErrClosed
	}
	lo, hi := store.HourRange(since, until)
	var total int64
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(SUM(cost), 0)::bigint FROM spend_hourly
		WHERE scope_kind = $1 AND scope_id = $2 AND hour >= $3 AND hour < $4`,
		int16(scope.Kind), scope.ID, lo, hi).Scan(&total)
	return kernel.Money(total), wrapErr("scope spend", err)
}

// Series is the spend of a scope per bucket of step (a multiple of an hour)
// over [since, until), buckets aligned to since; every bucket is returned, empty
// ones with zeros.
func (s *Store) Series(ctx context.Context, scope kernel.ScopeRef, since, until time.Time, step time.Duration) ([]store.SpendPoint, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	if step < time.Hour || step%time.Hour != 0 {
		return nil, fmt.Errorf("postgres: series: step %s is not a multiple of an hour", step)
	}
	if !until.After(since) {
		return []store.SpendPoint{}, nil
	}
	lo, hi := store.HourRange(since, until)
	rows, err := s.pool.Query(ctx, `SELECT hour, cost, requests, tokens, cache_hits, cache_misses, cache_saved
		FROM spend_hourly WHERE scope_kind = $1 AND scope_id = $2 AND hour >= $3 AND hour < $4 ORDER BY hour`,
		int16(scope.Kind), scope.ID, lo, hi)
	if err != nil {
		return nil, wrapErr("series", err)
	}
	defer rows.Close()
	out := store.NewSeriesBuckets(since, until, step)
	for rows.Next() {
		var hour int64
		var t store.SpendPoint
		if err := rows.Scan(&hour, &t.Cost, &t.Requests, &t.Tokens, &t.Cache.Hits, &t.Cache.Misses, &t.Cache.Saved); err != nil {
			return nil, wrapErr("series", err)
		}
		out.Add(hour, t)
	}
	return out.Points(), wrapErr("series", rows.Err())
}

var scopeColumn = map[kernel.ScopeKind]string{
	kernel.ScopeOrg: "org_id", kernel.ScopeTeam: "team_id", kernel.ScopeUser: "user_id",
	kernel.ScopeCustomer: "customer_id", kernel.ScopeKey: "key_id", kernel.ScopeRun: "run_id",
}

// Entries lists ledger rows ordered by (EndedAt, RequestID).
func (s *Store) Entries(ctx context.Context, f store.LedgerFilter) ([]store.LedgerEntry, error) {
	if s.closed() {
		return nil, store.ErrClosed
	}
	q := `SELECT ` + ledgerColumns + ` FROM ledger WHERE true`
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.Scope != nil && f.Scope.Kind == kernel.ScopeTag { // tags: "a=1,b=2"
		q += " AND strpos(',' || tags || ',', ',' || " + arg(f.Scope.ID) + " || ',') > 0"
	} else if f.Scope != nil && f.Scope.Kind != kernel.ScopeGlobal {
		col, ok := scopeColumn[f.Scope.Kind]
		if !ok {
			return nil, fmt.Errorf("postgres: entries: unknown scope kind %d", f.Scope.Kind)
		}
		if f.Scope.ID == "" {
			return []store.LedgerEntry{}, nil // entries are charged only to named scopes
		}
		q += " AND " + col + " = " + arg(f.Scope.ID)
	}
	if f.Model != "" {
		q += " AND model = " + arg(f.Model)
	}
	if !f.Since.IsZero() {
		q += " AND ended_ns >= " + arg(f.Since.UnixNano())
	}
	if !f.Until.IsZero() {
		q += " AND ended_ns < " + arg(f.Until.UnixNano())
	}
	if f.After != "" {
		a := arg(f.After)
		q += " AND (ended_ns, request_id COLLATE \"C\") > (SELECT ended_ns, request_id COLLATE \"C\" FROM ledger WHERE request_id = " + a + ")"
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += ` ORDER BY ended_ns, request_id COLLATE "C" LIMIT ` + arg(limit)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, wrapErr("entries", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.LedgerEntry, error) {
		var e store.LedgerEntry
		var st int16
		var started, ended int64
		var run, requested, unit, tags pgtype.Text // NULL: unset (ledgerColumns)
		var quantity, cacheSaved pgtype.Int8
		var cacheResult pgtype.Int2
		err := r.Scan(&e.RequestID, &e.KeyID, &e.UserID, &e.TeamID, &e.OrgID, &e.CustomerID, &e.Model,
			&e.Deployment, &e.Usage.Input, &e.Usage.CachedInput, &e.Usage.CacheWrite, &e.Usage.Output,
			&e.Usage.Reasoning, &e.Cost, &st, &e.HTTPStatus, &e.Stream, &started, &ended, &e.Unpriced, &run, &requested, &unit, &quantity,
			&cacheResult, &cacheSaved, &tags)
		e.RunID, e.RequestedModel = run.String, requested.String
		e.Unit, e.Quantity = kernel.Unit(unit.String), quantity.Int64
		e.Cache, e.CacheSaved = store.CacheResult(cacheResult.Int16), kernel.Money(cacheSaved.Int64)
		if tags.String != "" {
			e.Tags = strings.Split(tags.String, ",")
		}
		e.Status = kernel.Status(st)
		e.StartedAt, e.EndedAt = time.Unix(0, started).UTC(), time.Unix(0, ended).UTC()
		return e, err
	})
	if out == nil && err == nil {
		out = []store.LedgerEntry{}
	}
	return out, wrapErr("entries", err)
}
