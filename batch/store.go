package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Pending is a batch the gateway admitted and has not settled yet.
type Pending struct {
	ID         string `json:"id"` // the provider's batch id
	API        API    `json:"api"`
	Provider   string `json:"provider"`
	Deployment string `json:"deployment"`
	Model      string `json:"model"` // public model name
	KeyID      string `json:"key_id"`
	UserID     string `json:"user_id,omitempty"`
	TeamID     string `json:"team_id,omitempty"`
	OrgID      string `json:"org_id,omitempty"`
	CustomerID string `json:"customer_id,omitempty"`
	// ReservationID is the admission of the batch's worst case, released
	// by the Settler once its lines are settled.
	ReservationID string       `json:"reservation_id"`
	Reserved      kernel.Money `json:"reserved"`
	// Price is the batch price the lines are settled at.
	Price     kernel.Price `json:"price"`
	Lines     int          `json:"lines"`
	CreatedAt time.Time    `json:"created_at"`
}

// Entries are the ledger rows of the lines that ran: one per line, its
// request id the batch id and the line's custom_id, at the batch price.
func (p *Pending) Entries(lines []Line, endedAt time.Time) []store.LedgerEntry {
	out := make([]store.LedgerEntry, 0, len(lines))
	for _, l := range lines {
		out = append(out, store.LedgerEntry{
			RequestID: p.ID + "/" + l.CustomID, KeyID: p.KeyID, UserID: p.UserID, TeamID: p.TeamID, OrgID: p.OrgID,
			CustomerID: p.CustomerID, Model: p.Model, Deployment: p.Deployment, Usage: l.Usage,
			Cost: kernel.Cost(p.Price, l.Usage), Unpriced: p.Price.Unpriced, Status: l.Status, HTTPStatus: l.HTTPStatus,
			StartedAt: p.CreatedAt, EndedAt: endedAt,
		})
	}
	return out
}

// Store keeps pending batches as the store's "batch" objects (id
// "pending/<batch id>"), so they survive restarts and every replica sees
// them; "lease/poller" is the poller's lease.
type Store struct{ cfg store.Config }

// NewStore returns the pending batches of cfg.
func NewStore(cfg store.Config) *Store { return &Store{cfg: cfg} }

const pendingPrefix = "pending/"

// Add records a batch just created (once: a second Add of the id fails with
// store.ErrConflict).
func (s *Store) Add(ctx context.Context, p *Pending) error {
	return putDoc(ctx, s.cfg, pendingPrefix+p.ID, p)
}

// List returns the pending batches, oldest id first.
func (s *Store) List(ctx context.Context) ([]Pending, error) {
	return listDocs(ctx, s.cfg, pendingPrefix, func(*Pending) bool { return true })
}

// Get returns one pending batch (store.ErrNotFound when settled or unknown).
func (s *Store) Get(ctx context.Context, id string) (Pending, error) {
	return getDoc[Pending](ctx, s.cfg, pendingPrefix+id)
}

// Done removes a settled batch; removing one already removed is not an error.
func (s *Store) Done(ctx context.Context, id string) error {
	return removeDoc(ctx, s.cfg, pendingPrefix+id)
}

// The store's "batch" objects are JSON documents, one kind of record per id
// prefix ("pending/", "file/", "owner/": owners.go).

// putDoc records v under id, once (store.ErrConflict when known).
func putDoc(ctx context.Context, cfg store.Config, id string, v any) error {
	doc, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = cfg.Put(ctx, store.Object{Kind: store.KindBatch, ID: id, Doc: doc}, 0)
	return err
}

// getDoc decodes the object id (store.ErrNotFound when unknown).
func getDoc[T any](ctx context.Context, cfg store.Config, id string) (T, error) {
	var v T
	o, err := cfg.Get(ctx, store.KindBatch, id)
	if err != nil {
		return v, err
	}
	err = json.Unmarshal(o.Doc, &v)
	return v, err
}

// removeDoc deletes the object id; one already gone is not an error.
func removeDoc(ctx context.Context, cfg store.Config, id string) error {
	if err := cfg.Delete(ctx, store.KindBatch, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// listDocs decodes every object whose id starts with prefix, in id order.
func listDocs[T any](ctx context.Context, cfg store.Config, prefix string, keep func(*T) bool) ([]T, error) {
	objs, err := cfg.List(ctx, store.KindBatch, prefix, 0)
	if err != nil {
		return nil, err
	}
	var out []T
	for _, o := range objs {
		if !strings.HasPrefix(o.ID, prefix) {
			break
		}
		var v T
		if err := json.Unmarshal(o.Doc, &v); err != nil {
			return nil, fmt.Errorf("batch: stored %q: %w", o.ID, err)
		}
		if keep(&v) {
			out = append(out, v)
		}
	}
	return out, nil
}

type lease struct {
	Holder string    `json:"holder"`
	Until  time.Time `json:"until"`
}

const leaseID = "lease/poller"

// Acquire takes or renews the poller's lease for holder until now+ttl; it
// reports false when another holder's lease is still running. Optimistic
// concurrency on the lease object makes two replicas racing for it agree.
func (s *Store) Acquire(ctx context.Context, holder string, now time.Time, ttl time.Duration) (bool, error) {
	var cur lease
	version := int64(0)
	o, err := s.cfg.Get(ctx, store.KindBatch, leaseID)
	switch {
	case err == nil:
		if err := json.Unmarshal(o.Doc, &cur); err != nil {
			return false, err
		}
		version = o.Version
		if cur.Holder != holder && now.Before(cur.Until) {
			return false, nil
		}
	case !errors.Is(err, store.ErrNotFound):
		return false, err
	}
	doc, err := json.Marshal(lease{Holder: holder, Until: now.Add(ttl)})
	if err != nil {
		return false, err
	}
	if _, err := s.cfg.Put(ctx, store.Object{Kind: store.KindBatch, ID: leaseID, Doc: doc}, version); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return false, nil // another replica got there first
		}
		return false, err
	}
	return true, nil
}
