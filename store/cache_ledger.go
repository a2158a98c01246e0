package store

import "github.com/tollgate-ai/tollgate/kernel"

// CacheResult is what the response cache did for a ledger row's request
// (LedgerEntry.Cache; docs/caching.md "What a hit costs").
type CacheResult uint8

// Cache results. A hit's row is a row of its own kind: answered by the
// gateway, no deployment, its cost the cache's price per hit ($0 unless
// configured) and LedgerEntry.CacheSaved what the reply cost when it was
// stored.
const (
	CacheNone        CacheResult = iota // the model group has no cache
	CacheSkip                           // not cacheable, or Cache-Control: no-cache
	CacheMiss                           // looked up, went upstream
	CacheHit                            // answered from an exact entry
	CacheSemanticHit                    // answered from the nearest prompt's entry
)

var cacheResultNames = [...]string{"", "skip", "miss", "hit", "semantic_hit"}

// String is the result's name: "", "skip", "miss", "hit" or "semantic_hit".
func (c CacheResult) String() string {
	if int(c) < len(cacheResultNames) {
		return cacheResultNames[c]
	}
	return ""
}

// Hit: answered from the cache (exactly or semantically).
func (c CacheResult) Hit() bool { return c == CacheHit || c == CacheSemanticHit }

// ParseCacheResult is the result named s (String's inverse; unknown: CacheNone).
func ParseCacheResult(s string) CacheResult {
	for i, n := range cacheResultNames {
		if n == s {
			return CacheResult(i)
		}
	}
	return CacheNone
}

// CacheCounts are the cache's part of a spend total: hits (exact and
// semantic), misses, and what the hits saved.
type CacheCounts struct {
	Hits   int64        `json:"cache_hits,omitempty"`
	Misses int64        `json:"cache_misses,omitempty"`
	Saved  kernel.Money `json:"cache_saved,omitempty"`
}

// CacheCountsOf is one entry's part of the cache counts.
func CacheCountsOf(e *LedgerEntry) CacheCounts {
	switch {
	case e.Cache.Hit():
		return CacheCounts{Hits: 1, Saved: e.CacheSaved}
	case e.Cache == CacheMiss:
		return CacheCounts{Misses: 1}
	}
	return CacheCounts{}
}

// Add adds o to c.
func (c *CacheCounts) Add(o CacheCounts) {
	c.Hits += o.Hits
	c.Misses += o.Misses
	c.Saved += o.Saved
}
