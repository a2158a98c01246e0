package gateway

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestRecordOfIsLedgerEntrysInverse: a pending settlement kept as a ledger
// row comes back with every field, tags, unit and cache included, so its
// settlement names every scope the admission reserved on.
func TestRecordOfIsLedgerEntrysInverse(t *testing.T) {
	now := time.Unix(1_700_000_000, 0).UTC()
	for _, c := range []store.CacheResult{store.CacheNone, store.CacheMiss, store.CacheSkip, store.CacheHit, store.CacheSemanticHit} {
		e := store.LedgerEntry{
			RequestID: "r1", KeyID: "k1", UserID: "u1", TeamID: "t1", OrgID: "o1", CustomerID: "c1",
			RunID: "run1", Tags: []string{"env=prod", "feature=search"},
			Model: "g", RequestedModel: "gpt-x", Deployment: "d1",
			Unit: kernel.UnitImages, Quantity: 2,
			Usage:  kernel.Usage{Input: 10, Output: 20},
			Status: kernel.StatusCompleted, HTTPStatus: 200, Stream: true,
			StartedAt: now, EndedAt: now.Add(time.Second), Unpriced: true,
			Cache: c,
		}
		if c == store.CacheHit || c == store.CacheSemanticHit {
			e.CacheSaved = 42
		}
		require.Equal(t, e, ledgerEntry(recordOf(&e)), "cache %v", c)
	}
}
