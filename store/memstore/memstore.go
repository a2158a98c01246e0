package memstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock that stamps objects and audit entries.
func WithClock(now func() time.Time) Option {
	return func(s *Store) {
		if now != nil {
			s.now = now
		}
	}
}

type bucketKey struct {
	kind kernel.ScopeKind
	id   string
	hour int64 // Unix second of the UTC hour
}

// bucket is one (scope, hour) total; its Start is not set.
type bucket = store.SpendPoint

// Store is an in-memory store.Store. The zero value is not usable; call New.
type Store struct {
	now func() time.Time

	mu      sync.RWMutex
	closed  bool
	quit    chan struct{} // closed by Close
	changed chan struct{} // closed (and replaced) on every revision change
	rev     int64
	objects map[store.Kind]map[string]store.Object
	ledger  map[string]struct{}
	rows    []store.LedgerEntry // by (EndedAt, RequestID) once sorted
	dirty   bool                // rows appended since the last sort
	totals  map[bucketKey]*bucket
	audit   []store.AuditEntry
	// responses are the Responses API's stored responses (responses.go).
	responses map[responseKey]store.StoredResponse
	// owners are the native response ids (responses.go), written by Append.
	owners map[string]store.ResponseOwner
	// sessions are the console sessions by token hash (sessions.go).
	sessions map[string]store.Session
	// alerts are the alerts fired, by id, with their deliveries (alerts.go).
	alerts map[string]*store.AlertRecord
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{
		now:     time.Now,
		quit:    make(chan struct{}),
		changed: make(chan struct{}),
		objects: make(map[store.Kind]map[string]store.Object),
		ledger:  make(map[string]struct{}),
		totals:  make(map[bucketKey]*bucket),
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Get returns one object or store.ErrNotFound.
func (s *Store) Get(_ context.Context, kind store.Kind, id string) (store.Object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Object{}, store.ErrClosed
	}
	obj, ok := s.objects[kind][id]
	if !ok {
		return store.Object{}, store.ErrNotFound
	}
	return cloneObject(obj), nil
}

func cloneObject(o store.Object) store.Object {
	o.Doc = slices.Clone(o.Doc)
	return o
}

// List returns objects of a kind ordered by id, after `after`, at most limit (0: all).
func (s *Store) List(_ context.Context, kind store.Kind, after string, limit int) ([]store.Object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	out := []store.Object{}
	for id, obj := range s.objects[kind] {
		if id > after {
			out = append(out, cloneObject(obj))
		}
	}
	slices.SortFunc(out, func(a, b store.Object) int { return cmp.Compare(a.ID, b.ID) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Put creates or replaces an object (see store.Config.Put).
func (s *Store) Put(_ context.Context, obj store.Object, ifVersion int64) (int64, error) {
	if obj.Kind == "" || obj.ID == "" {
		return 0, fmt.Errorf("memstore: put: kind and id are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	cur, exists := s.objects[obj.Kind][obj.ID]
	switch {
	case ifVersion == 0 && exists:
		return 0, store.ErrConflict
	case ifVersion > 0 && (!exists || cur.Version != ifVersion):
		return 0, store.ErrConflict
	}
	byID := s.objects[obj.Kind]
	if byID == nil {
		byID = make(map[string]store.Object)
		s.objects[obj.Kind] = byID
	}
	rev := s.bump()
	byID[obj.ID] = store.Object{
		Kind: obj.Kind, ID: obj.ID, Doc: slices.Clone(obj.Doc),
		Version: rev, UpdatedAt: s.now().UTC(),
	}
	return rev, nil
}

// Delete removes an object; store.ErrNotFound if absent.
func (s *Store) Delete(_ context.Context, kind store.Kind, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if _, ok := s.objects[kind][id]; !ok {
		return store.ErrNotFound
	}
	delete(s.objects[kind], id)
	s.bump()
	return nil
}

// bump raises the revision and wakes the watchers; s.mu is held.
func (s *Store) bump() int64 {
	s.rev++
	close(s.changed)
	s.changed = make(chan struct{})
	return s.rev
}

// Revision is the store-wide revision.
func (s *Store) Revision(context.Context) (int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	return s.rev, nil
}

// Watch sends the revision each time it changes, coalesced, until ctx ends or
// the store closes; then the channel is closed.
func (s *Store) Watch(ctx context.Context) <-chan int64 {
	ch := make(chan int64, 1)
	s.mu.RLock()
	last, changed := s.rev, s.changed
	s.mu.RUnlock()
	go func() {
		defer close(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.quit:
				return
			case <-changed:
			}
			s.mu.RLock()
			rev := s.rev
			changed = s.changed
			s.mu.RUnlock()
			if rev == last {
				continue
			}
			last = rev
			select { // keep only the latest
			case <-ch:
			default:
			}
			ch <- rev
		}
	}()
	return ch
}

// Append records entries at once; a request id already recorded is ignored.
func (s *Store) Append(_ context.Context, entries ...store.LedgerEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	for i := range entries {
		e := entries[i]
		s.putOwner(e.Owner)
		e.Owner = nil
		if _, dup := s.ledger[e.RequestID]; dup {
			continue
		}
		s.ledger[e.RequestID] = struct{}{}
		e.StartedAt, e.EndedAt = e.StartedAt.UTC().Round(0), e.EndedAt.UTC().Round(0)
		if n := len(s.rows); n > 0 && compareRows(s.rows[n-1], e) > 0 {
			s.dirty = true
		}
		s.rows = append(s.rows, e)
		hour := e.EndedAt.Truncate(time.Hour).Unix()
		tokens := e.Usage.Total()
		cc := store.CacheCountsOf(&e)
		for _, ref := range e.Scopes() {
			k := bucketKey{ref.Kind, ref.ID, hour}
			b := s.totals[k]
			if b == nil {
				b = &bucket{}
				s.totals[k] = b
			}
			b.Cost += e.Cost
			b.Requests++
			b.Tokens += tokens
			b.Cache.Add(cc)
		}
	}
	return nil
}

func compareRows(a, b store.LedgerEntry) int {
	return cmp.Or(a.EndedAt.Compare(b.EndedAt), cmp.Compare(a.RequestID, b.RequestID))
}

// Flush returns at once: Append is already durable (for as long as the process lives).
func (s *Store) Flush(context.Context) error {
	return nil
}

// AppendAudit records one admin change; a zero At is the current time.
func (s *Store) AppendAudit(_ context.Context, e store.AuditEntry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	if e.At.IsZero() {
		e.At = s.now()
	}
	e.At = e.At.UTC().Round(0)
	e.ID = int64(len(s.audit)) + 1
	s.audit = append(s.audit, e)
	return nil
}

// ListAudit returns entries with ID > afterID, oldest first, at most limit (0: 100).
func (s *Store) ListAudit(_ context.Context, afterID int64, limit int) ([]store.AuditEntry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	if limit <= 0 {
		limit = 100
	}
	from := int(min(max(afterID, 0), int64(len(s.audit))))
	to := min(from+limit, len(s.audit))
	return slices.Clone(s.audit[from:to:to]), nil
}

// Close ends every Watch; later calls return store.ErrClosed.
func (s *Store) Close(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
	return nil
}
