package memstore

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

var _ store.Sessions = (*Store)(nil)

// PutSession stores (or replaces) a session.
func (s *Store) PutSession(_ context.Context, ses store.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if s.sessions == nil {
		s.sessions = map[string]store.Session{}
	}
	s.sessions[ses.Hash] = ses
	return nil
}

// GetSession returns the unexpired session with that hash.
func (s *Store) GetSession(_ context.Context, hash string, now time.Time) (store.Session, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Session{}, store.ErrClosed
	}
	ses, ok := s.sessions[hash]
	if !ok || !now.Before(ses.ExpiresAt) {
		return store.Session{}, store.ErrNotFound
	}
	return ses, nil
}

// DeleteSession removes the session with that hash.
func (s *Store) DeleteSession(_ context.Context, hash string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if _, ok := s.sessions[hash]; !ok {
		return store.ErrNotFound
	}
	delete(s.sessions, hash)
	return nil
}

// PurgeSessions removes the expired sessions.
func (s *Store) PurgeSessions(_ context.Context, now time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	var n int64
	for h, ses := range s.sessions {
		if !now.Before(ses.ExpiresAt) {
			delete(s.sessions, h)
			n++
		}
	}
	return n, nil
}
