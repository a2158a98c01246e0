package memstore

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Responses = (*Store)(nil)

type responseKey struct{ key, id string }

// PutResponse stores (or replaces) a response.
func (s *Store) PutResponse(_ context.Context, r store.StoredResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if s.responses == nil {
		s.responses = map[responseKey]store.StoredResponse{}
	}
	r.Response, r.Input = slices.Clone(r.Response), slices.Clone(r.Input)
	s.responses[responseKey{r.KeyID, r.ID}] = r
	return nil
}

// GetResponse returns the key's unexpired response.
func (s *Store) GetResponse(_ context.Context, keyID, id string, now time.Time) (store.StoredResponse, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.StoredResponse{}, store.ErrClosed
	}
	r, ok := s.responses[responseKey{keyID, id}]
	if !ok || !now.Before(r.ExpiresAt) {
		return store.StoredResponse{}, store.ErrNotFound
	}
	r.Response, r.Input = slices.Clone(r.Response), slices.Clone(r.Input)
	return r, nil
}

// DeleteResponse removes the key's response.
func (s *Store) DeleteResponse(_ context.Context, keyID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	k := responseKey{keyID, id}
	if _, ok := s.responses[k]; !ok {
		return store.ErrNotFound
	}
	delete(s.responses, k)
	return nil
}

// PurgeResponses removes the expired responses.
func (s *Store) PurgeResponses(_ context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	var n int64
	for id, o := range s.owners {
		if !now.Before(o.ExpiresAt) {
			delete(s.owners, id)
		}
	}
	for k, r := range s.responses {
		if !now.Before(r.ExpiresAt) {
			delete(s.responses, k)
			n++
		}
	}
	return n, nil
}

var _ store.ResponseOwners = (*Store)(nil)

// putOwner records a native response id; the first owner of an id stays.
// The lock is held.
func (s *Store) putOwner(o *store.ResponseOwner) {
	if o == nil {
		return
	}
	if s.owners == nil {
		s.owners = map[string]store.ResponseOwner{}
	}
	if _, ok := s.owners[o.ID]; !ok {
		r := *o
		r.CreatedAt, r.ExpiresAt = r.CreatedAt.UTC().Round(0), r.ExpiresAt.UTC().Round(0)
		s.owners[o.ID] = r
	}
}

// GetResponseOwner returns the owner of an unexpired native response id.
func (s *Store) GetResponseOwner(_ context.Context, id string, now time.Time) (store.ResponseOwner, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.ResponseOwner{}, store.ErrClosed
	}
	o, ok := s.owners[id]
	if !ok || !now.Before(o.ExpiresAt) {
		return store.ResponseOwner{}, store.ErrNotFound
	}
	o.Pending = bytes.Clone(o.Pending)
	return o, nil
}

// DeleteResponseOwner forgets a native response id.
func (s *Store) DeleteResponseOwner(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if _, ok := s.owners[id]; !ok {
		return store.ErrNotFound
	}
	delete(s.owners, id)
	return nil
}

// PutResponseOwner records an owner at once; the first owner of an id stays.
func (s *Store) PutResponseOwner(_ context.Context, o store.ResponseOwner) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	o.Pending = bytes.Clone(o.Pending)
	s.putOwner(&o)
	return nil
}

// ClaimResponseSettlement takes an id's pending settlement and clears it.
func (s *Store) ClaimResponseSettlement(_ context.Context, id string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	o, ok := s.owners[id]
	if !ok || o.Pending == nil {
		return nil, store.ErrNotFound
	}
	p := o.Pending
	o.Pending = nil
	s.owners[id] = o
	return p, nil
}

// PendingResponseOwners lists the owners with a pending settlement, oldest
// first.
func (s *Store) PendingResponseOwners(_ context.Context) ([]store.ResponseOwner, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	var out []store.ResponseOwner
	for _, o := range s.owners {
		if o.Pending != nil {
			o.Pending = bytes.Clone(o.Pending)
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b store.ResponseOwner) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}
