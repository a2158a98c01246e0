package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/store"
)

// DefaultResponsesRetention is how long stored responses of the Responses
// API are kept when Config.ResponsesRetention is zero: 30 days, as OpenAI
// keeps them.
const DefaultResponsesRetention = 30 * 24 * time.Hour

// responseStore adapts the store's stored responses to the processor's
// ResponseStore, with the retention: a response expires Retention after it
// was made.
type responseStore struct {
	st        store.Responses
	retention time.Duration
	now       func() time.Time
}

var _ extproc.ResponseStore = (*responseStore)(nil)

// newResponseStore returns the processor's store of responses, nil when the
// backend keeps none.
func newResponseStore(st store.Store, retention time.Duration, now func() time.Time) *responseStore {
	rs, ok := st.(store.Responses)
	if !ok {
		return nil
	}
	if retention <= 0 {
		retention = DefaultResponsesRetention
	}
	return &responseStore{st: rs, retention: retention, now: now}
}

func (r *responseStore) PutResponse(ctx context.Context, sr *extproc.StoredResponse) error {
	return r.st.PutResponse(ctx, store.StoredResponse{
		ID: sr.ID, KeyID: sr.KeyID, Response: sr.Response, Input: sr.Input, Run: sr.Run,
		CreatedAt: sr.CreatedAt, ExpiresAt: sr.CreatedAt.Add(r.retention),
	})
}

func (r *responseStore) GetResponse(ctx context.Context, keyID, id string) (*extproc.StoredResponse, error) {
	sr, err := r.st.GetResponse(ctx, keyID, id, r.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, extproc.ErrResponseNotFound
	}
	if err != nil {
		return nil, err
	}
	return &extproc.StoredResponse{ID: sr.ID, KeyID: sr.KeyID, Response: sr.Response, Input: sr.Input, Run: sr.Run, CreatedAt: sr.CreatedAt}, nil
}

func (r *responseStore) DeleteResponse(ctx context.Context, keyID, id string) error {
	err := r.st.DeleteResponse(ctx, keyID, id)
	if errors.Is(err, store.ErrNotFound) {
		return extproc.ErrResponseNotFound
	}
	return err
}

// purge removes expired responses every interval until ctx ends (expired ones
// are already invisible: this only frees the space).
func (r *responseStore) purge(ctx context.Context, interval time.Duration, log *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if n, err := r.st.PurgeResponses(ctx, r.now()); err != nil && ctx.Err() == nil {
				log.Warn("purge stored responses failed", "err", err)
			} else if n > 0 {
				log.Info("purged stored responses", "count", n)
			}
		}
	}
}

// processorResponseOptions are the processor options of stored responses, and
// the purge loop to run (nil when the store keeps none).
func processorResponseOptions(st store.Store, cfg *Config, now func() time.Time, log *slog.Logger) ([]extproc.Option, func(context.Context) error) {
	rs := newResponseStore(st, cfg.ResponsesRetention, now)
	if rs == nil {
		return nil, nil
	}
	opts := []extproc.Option{extproc.WithResponseStore(rs)}
	if ro, ok := st.(store.ResponseOwners); ok {
		opts = append(opts, extproc.WithResponseOwners(&responseOwners{st: ro, ledger: st, now: now, retention: rs.retention}))
	}
	return opts, func(ctx context.Context) error { return rs.purge(ctx, time.Hour, log) }
}

// responseOwner is the store's record of a native response id handed out at
// now, kept for the retention.
func responseOwner(o *extproc.ResponseOwner, now time.Time, retention time.Duration) *store.ResponseOwner {
	if retention <= 0 {
		retention = DefaultResponsesRetention
	}
	return &store.ResponseOwner{
		ID: o.ID, KeyID: o.KeyID, Deployment: o.Deployment, Model: o.Model, Store: o.Store, Background: o.Background,
		Run: o.Run, CreatedAt: now, ExpiresAt: now.Add(retention),
	}
}

// responseOwners adapts the store's owners of native response ids to the
// processor's ResponseOwners. They are written with the ledger's group
// commit, a few milliseconds after the response: an id not found may be one
// still queued, so a miss flushes the ledger and reads again (only misses
// pay it: an unknown id, or a follow-up faster than the commit). One
// another replica has not committed yet is read again by
// AwaitResponseOwner, which the processor calls only for an id found in no
// store.
type responseOwners struct {
	st        store.ResponseOwners
	ledger    store.Ledger
	now       func() time.Time
	retention time.Duration
	waits     []time.Duration // nil: ownerWaits
}

// ownerWaits are AwaitResponseOwner's pauses before each read: 200 ms in
// all, well above a replica's commit window (SQLite 10 ms, PostgreSQL a
// few; docs/operations.md) and a commit slowed by load; most finds come at
// the first or second read.
var ownerWaits = []time.Duration{
	5 * time.Millisecond, 15 * time.Millisecond, 30 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
}

var (
	_ extproc.ResponseOwners = (*responseOwners)(nil)
	_ ownership.Awaiter      = (*responseOwners)(nil)
)

// AwaitResponseOwner reads id again after each of the waits, until it is
// found.
func (r *responseOwners) AwaitResponseOwner(ctx context.Context, id string) (*extproc.ResponseOwner, error) {
	waits := r.waits
	if waits == nil {
		waits = ownerWaits
	}
	for _, d := range waits {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		o, err := r.st.GetResponseOwner(ctx, id, r.now())
		if !errors.Is(err, store.ErrNotFound) {
			return r.owner(o, err)
		}
	}
	return nil, extproc.ErrResponseNotFound
}

func (r *responseOwners) ResponseOwner(ctx context.Context, id string) (*extproc.ResponseOwner, error) {
	o, err := r.st.GetResponseOwner(ctx, id, r.now())
	if errors.Is(err, store.ErrNotFound) {
		if err := r.ledger.Flush(ctx); err != nil {
			return nil, err
		}
		o, err = r.st.GetResponseOwner(ctx, id, r.now())
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, extproc.ErrResponseNotFound
	}
	return r.owner(o, err)
}

// owner is the processor's owner of the store's o (err).
func (r *responseOwners) owner(o store.ResponseOwner, err error) (*extproc.ResponseOwner, error) {
	if err != nil {
		return nil, err
	}
	return &extproc.ResponseOwner{
		ID: o.ID, KeyID: o.KeyID, Deployment: o.Deployment, Model: o.Model, Store: o.Store, Background: o.Background,
		Run: o.Run, Pending: len(o.Pending) > 0,
	}, nil
}

// PutOwner records o at once (there is no ledger row to carry it), with
// pending, when set, as its pending settlement (pendingDoc, JSON).
func (r *responseOwners) PutOwner(ctx context.Context, o *extproc.ResponseOwner, pending *extproc.Deferred) error {
	so := responseOwner(o, r.now(), r.retention)
	if pending != nil {
		e := ledgerEntry(pending.Record)
		p, err := json.Marshal(pendingDoc{Entry: &e, Hold: pending.Hold})
		if err != nil {
			return err
		}
		so.Pending = p
	}
	return r.st.PutResponseOwner(ctx, *so)
}

// ClaimSettlement takes the pending settlement of id, as the record the
// processor settles.
func (r *responseOwners) ClaimSettlement(ctx context.Context, id string) (*extproc.Deferred, error) {
	p, err := r.st.ClaimResponseSettlement(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, extproc.ErrResponseNotFound
	}
	if err != nil {
		return nil, err
	}
	d, err := decodePending(p)
	if err != nil {
		return nil, fmt.Errorf("gateway: pending settlement of %s: %w", id, err)
	}
	return &extproc.Deferred{Record: recordOf(d.Entry), Hold: d.Hold}, nil
}

// pendingDoc is a background response's pending settlement as the store
// keeps it: the ledger entry to settle and the reservation it releases
// (restoreHolds reserves it again after a restart).
type pendingDoc struct {
	Entry *store.LedgerEntry `json:"entry"`
	Hold  *ownership.Hold    `json:"hold,omitempty"`
}

// decodePending reads a pending settlement; one kept before holds were
// (a bare ledger entry) has none.
func decodePending(p []byte) (*pendingDoc, error) {
	var d pendingDoc
	if err := json.Unmarshal(p, &d); err != nil {
		return nil, err
	}
	if d.Entry == nil {
		var e store.LedgerEntry
		if err := json.Unmarshal(p, &e); err != nil {
			return nil, err
		}
		d.Entry = &e
	}
	return &d, nil
}

func (r *responseOwners) ForgetResponse(ctx context.Context, id string) error {
	err := r.st.DeleteResponseOwner(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return extproc.ErrResponseNotFound
	}
	return err
}
