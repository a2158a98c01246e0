package admin

import (
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// The response cache's part of the spend reports (docs/caching.md): hits,
// misses and what the hits saved, beside each total, bucket and group.

// cacheCountsOut is the API form of c (nil when the cache did nothing).
func cacheCountsOut(c store.CacheCounts) *adminv1.CacheCounts {
	if c == (store.CacheCounts{}) {
		return nil
	}
	return &adminv1.CacheCounts{Hits: c.Hits, Misses: c.Misses, Saved: moneyOut(c.Saved)}
}

// pointOut is the API form of a spend bucket.
func pointOut(p *store.SpendPoint) *adminv1.SpendPoint {
	return &adminv1.SpendPoint{
		Start: tsOut(p.Start), Cost: moneyOut(p.Cost), Requests: p.Requests, Tokens: p.Tokens,
		Cache: cacheCountsOut(p.Cache),
	}
}

// savedOut is a hit row's savings (nil on other rows).
func savedOut(e *store.LedgerEntry) *adminv1.Money {
	if !e.Cache.Hit() {
		return nil
	}
	return moneyOut(e.CacheSaved)
}
