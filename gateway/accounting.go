package gateway

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// processorAccountant is the accountant as the processor sees it: it turns
// what the processor observed of a request into the ledger entry the
// accountant settles.
type processorAccountant struct {
	*accounting.Accountant
	// retention of the native response ids a settlement records (0:
	// DefaultResponsesRetention).
	retention time.Duration
}

var _ extproc.Accountant = processorAccountant{}

// Settle implements extproc.Accountant.
func (a processorAccountant) Settle(ctx context.Context, rec *extproc.Record) (kernel.Money, error) {
	e := ledgerEntry(rec)
	if o := rec.Owner; o != nil {
		e.Owner = responseOwner(o, rec.EndedAt, a.retention)
	}
	if rec.Price != nil { // a pass-through reply's model's price
		return a.SettleAt(ctx, e, *rec.Price)
	}
	return a.Accountant.Settle(ctx, e)
}

// RecordRefused implements extproc.Accountant: the $0 row of a request
// a guardrail refused before admission.
func (a processorAccountant) RecordRefused(ctx context.Context, rec *extproc.Record) error {
	return a.Accountant.RecordRefused(ctx, ledgerEntry(rec))
}

// ledgerEntry is the ledger entry of rec before settlement (no cost yet).
func ledgerEntry(rec *extproc.Record) store.LedgerEntry {
	e := store.LedgerEntry{
		RequestID:      rec.RequestID,
		CustomerID:     rec.CustomerID,
		RunID:          rec.RunID,
		Tags:           rec.Tags,
		Model:          rec.Model,
		RequestedModel: rec.RequestedModel,
		Unit:           rec.Unit,
		Quantity:       rec.Quantity,
		Deployment:     rec.Deployment,
		Usage:          rec.Usage,
		Status:         rec.Status,
		HTTPStatus:     rec.HTTPStatus,
		Stream:         rec.Stream,
		StartedAt:      rec.StartedAt,
		EndedAt:        rec.EndedAt,
		Unpriced:       rec.Unpriced,
	}
	if p := rec.Principal; p != nil {
		e.KeyID, e.UserID, e.TeamID, e.OrgID = p.KeyID, p.UserID, p.TeamID, p.OrgID
	}
	e.Cache, e.CacheSaved = cacheLedger(&rec.Cache)
	return e
}

// recordOf is ledgerEntry's inverse: the processor's Record of a ledger
// row kept for later (a background response's pending settlement), so the
// settlement names every scope (tags included) its admission reserved on.
func recordOf(e *store.LedgerEntry) *extproc.Record {
	rec := &extproc.Record{
		RequestID:      e.RequestID,
		Principal:      &extproc.Principal{KeyID: e.KeyID, UserID: e.UserID, TeamID: e.TeamID, OrgID: e.OrgID},
		CustomerID:     e.CustomerID,
		RunID:          e.RunID,
		Tags:           e.Tags,
		Model:          e.Model,
		RequestedModel: e.RequestedModel,
		Unit:           e.Unit,
		Quantity:       e.Quantity,
		Deployment:     e.Deployment,
		Usage:          e.Usage,
		Status:         e.Status,
		HTTPStatus:     e.HTTPStatus,
		Stream:         e.Stream,
		StartedAt:      e.StartedAt,
		EndedAt:        e.EndedAt,
		Unpriced:       e.Unpriced,
	}
	switch e.Cache {
	case store.CacheSemanticHit:
		rec.Cache = extproc.CacheRecord{Hit: true, Semantic: true, Saved: e.CacheSaved}
	case store.CacheHit:
		rec.Cache = extproc.CacheRecord{Hit: true, Saved: e.CacheSaved}
	case store.CacheMiss:
		rec.Cache.Status = "miss"
	case store.CacheSkip:
		rec.Cache.Status = "skip"
	}
	return rec
}

// cacheLedger is the ledger's record of what the response cache did: a
// hit's row is of its own kind, with the cost it saved.
func cacheLedger(c *extproc.CacheRecord) (store.CacheResult, kernel.Money) {
	switch {
	case c.Hit && c.Semantic:
		return store.CacheSemanticHit, c.Saved
	case c.Hit:
		return store.CacheHit, c.Saved
	case c.Status == "miss":
		return store.CacheMiss, 0
	case c.Status == "skip":
		return store.CacheSkip, 0
	}
	return store.CacheNone, 0
}

// joinCounters registers this replica with the counters shared by replicas
// before the processor serves (accounting.Accountant.Join: the others then
// wait for it after Redis loses its data). A Redis that cannot be reached
// does not stop the start: the replica registers at its first Sync.
func (g *Gateway) joinCounters(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second) // the grace, and a few round trips
	defer cancel()
	if err := g.Accountant.Join(ctx); err != nil {
		g.log.Warn("joining the shared counters failed; this replica registers at its next sync", "err", err)
	}
	return nil
}
