package memstore

import (
	"context"
	"slices"
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
	for k, r := range s.responses {
		if !now.Before(r.ExpiresAt) {
			delete(s.responses, k)
			n++
		}
	}
	return n, nil
}
