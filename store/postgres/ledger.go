package postgres

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

// Append queues entries for the group-commit writers (see store.Ledger.Append).
func (s *Store) Append(ctx context.Context, entries ...store.LedgerEntry) error {
	if len(s.writers) == 1 {
		return s.writers[0].Append(ctx, entries...)
	}
	if len(entries) == 1 {
		return s.writers[shard(entries[0].RequestID, len(s.writers))].Append(ctx, entries...)
	}
	groups := make([][]store.LedgerEntry, len(s.writers))
	for _, e := range entries {
		i := shard(e.RequestID, len(s.writers))
		groups[i] = append(groups[i], e)
	}
	for i, g := range groups {
		if len(g) > 0 {
			if err := s.writers[i].Append(ctx, g...); err != nil {
				return err
			}
		}
	}
	return nil
}

// shard picks the writer of a request id (FNV-1a), so one id always goes
// through the same queue.
func shard(id string, n int) int {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int(h % uint32(n))
}

// Flush returns once everything appended before the call is durable.
func (s *Store) Flush(ctx context.Context) error {
	var errs []error
	for _, w := range s.writers {
		errs = append(errs, w.Flush(ctx))
	}
	return errors.Join(errs...)
}

// Stats returns the ledger writers' counters, summed (Batches is the number of
// ledger transactions committed).
func (s *Store) Stats() groupcommit.Stats {
	var st groupcommit.Stats
	for _, w := range s.writers {
		x := w.Stats()
		st.Batches += x.Batches
		st.Entries += x.Entries
		st.FlushErrors += x.FlushErrors
		st.QueueDepth += x.QueueDepth
		st.FlushTime += x.FlushTime
	}
	return st
}

// ledgerColumns are the ledger's columns in the order of writeBatch's
// unnest arrays and of Entries' scan; run_id, requested_model, unit,
// quantity, cache, cache_saved and tags are NULL when unset.
const ledgerColumns = `request_id, key_id, user_id, team_id, org_id, customer_id, model, deployment,
	input, cached_input, cache_write, output, reasoning, cost, status, http_status, stream, started_ns, ended_ns,
	unpriced, run_id, requested_model, unit, quantity, cache, cache_saved, tags`

// attemptTimeout bounds one attempt to write a batch, so a hung connection is
// retried instead of blocking the writer.
const attemptTimeout = 30 * time.Second

// writeBatch writes one batch in one transaction: the rows (sorted by request
// id, duplicates dropped) with INSERT … ON CONFLICT DO NOTHING RETURNING, then
// the hourly totals of the rows actually inserted, upserted in (scope, hour)
// order. A retry of a batch that committed inserts nothing and adds nothing.
func (s *Store) writeBatch(ctx context.Context, batch []store.LedgerEntry) error {
	ctx, cancel := context.WithTimeout(ctx, attemptTimeout)
	defer cancel()
	rows := slices.Clone(batch)
	slices.SortStableFunc(rows, func(a, b store.LedgerEntry) int { return cmp.Compare(a.RequestID, b.RequestID) })
	rows = slices.CompactFunc(rows, func(a, b store.LedgerEntry) bool { return a.RequestID == b.RequestID })

	n := len(rows)
	var (
		ids, keys, users, teams, orgs, customers, models, deps = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		in, cin, cw, out, rsn, cost, started, ended = make([]int64, n), make([]int64, n), make([]int64, n),
			make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		status, httpStatus = make([]int16, n), make([]int32, n)
		stream, unpriced   = make([]bool, n), make([]bool, n)
		runs               = make([]*string, n) // nil: NULL, no run
		requested          = make([]*string, n) // nil: NULL, the group's own name
		units              = make([]*string, n) // nil: NULL, tokens
		quantities         = make([]*int64, n)
		cacheRes           = make([]*int16, n)  // nil: NULL, no cache
		cacheSaved         = make([]*int64, n)  // nil: NULL, nothing saved
		tags               = make([]*string, n) // nil: NULL, no tags
	)
	for i := range rows {
		e := &rows[i]
		ids[i], keys[i], users[i], teams[i], orgs[i], customers[i] = e.RequestID, e.KeyID, e.UserID, e.TeamID, e.OrgID, e.CustomerID
		models[i], deps[i] = e.Model, e.Deployment
		in[i], cin[i], cw[i], out[i], rsn[i] = e.Usage.Input, e.Usage.CachedInput, e.Usage.CacheWrite, e.Usage.Output, e.Usage.Reasoning
		cost[i], status[i], httpStatus[i], stream[i] = int64(e.Cost), int16(e.Status), int32(e.HTTPStatus), e.Stream
		started[i], ended[i], unpriced[i] = e.StartedAt.UnixNano(), e.EndedAt.UnixNano(), e.Unpriced
		if e.RunID != "" {
			runs[i] = &e.RunID
		}
		if e.RequestedModel != "" {
			requested[i] = &e.RequestedModel
		}
		if e.Unit != "" && e.Unit != kernel.UnitTokens {
			units[i], quantities[i] = (*string)(&e.Unit), &e.Quantity
		}
		if e.Cache != store.CacheNone {
			c, saved := int16(e.Cache), int64(e.CacheSaved)
			cacheRes[i], cacheSaved[i] = &c, &saved
		}
		if len(e.Tags) > 0 {
			joined := strings.Join(e.Tags, ",")
			tags[i] = &joined
		}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := insertOwners(ctx, tx, batch); err != nil {
			return err
		}
		res, err := tx.Query(ctx, `INSERT INTO ledger (`+ledgerColumns+`)
			SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
			  $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[],
			  $14::bigint[], $15::smallint[], $16::int[], $17::bool[], $18::bigint[], $19::bigint[], $20::bool[], $21::text[], $22::text[], $23::text[], $24::bigint[],
			  $25::smallint[], $26::bigint[], $27::text[])
			ON CONFLICT (request_id) DO NOTHING
			RETURNING request_id`,
			ids, keys, users, teams, orgs, customers, models, deps, in, cin, cw, out, rsn, cost, status, httpStatus,
			stream, started, ended, unpriced, runs, requested, units, quantities,
			cacheRes, cacheSaved, tags)
		if err != nil {
			return err
		}
		inserted, err := pgx.CollectRows(res, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(inserted) == 0 {
			return nil
		}
		if len(inserted) < len(rows) {
			keep := make(map[string]struct{}, len(inserted))
			for _, id := range inserted {
				keep[id] = struct{}{}
			}
			rows = slices.DeleteFunc(rows, func(e store.LedgerEntry) bool { _, ok := keep[e.RequestID]; return !ok })
		}
		bs := groupcommit.Totals(rows)
		var (
			kinds            = make([]int16, len(bs))
			sids             = make([]string, len(bs))
			hours, costs     = make([]int64, len(bs)), make([]int64, len(bs))
			requests, tokens = make([]int64, len(bs)), make([]int64, len(bs))
			hits, misses     = make([]int64, len(bs)), make([]int64, len(bs))
			saved            = make([]int64, len(bs))
		)
		for i, b := range bs {
			kinds[i], sids[i], hours[i] = int16(b.Scope.Kind), b.Scope.ID, b.Hour.Unix()
			costs[i], requests[i], tokens[i] = int64(b.Cost), b.Requests, b.Tokens
			hits[i], misses[i], saved[i] = b.Cache.Hits, b.Cache.Misses, int64(b.Cache.Saved)
		}
		_, err = tx.Exec(ctx, `INSERT INTO spend_hourly AS s (scope_kind, scope_id, hour, cost, requests, tokens,
			  cache_hits, cache_misses, cache_saved)
			SELECT k, i, h, c, r, n, ch, cm, cs FROM unnest($1::smallint[], $2::text[], $3::bigint[], $4::bigint[],
			  $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[])
			  WITH ORDINALITY AS t(k, i, h, c, r, n, ch, cm, cs, ord) ORDER BY ord
			ON CONFLICT (scope_kind, scope_id, hour) DO UPDATE SET cost = s.cost + EXCLUDED.cost,
			  requests = s.requests + EXCLUDED.requests, tokens = s.tokens + EXCLUDED.tokens,
			  cache_hits = s.cache_hits + EXCLUDED.cache_hits, cache_misses = s.cache_misses + EXCLUDED.cache_misses,
			  cache_saved = s.cache_saved + EXCLUDED.cache_saved`,
			kinds, sids, hours, costs, requests, tokens, hits, misses, saved)
		return err
	})
}
