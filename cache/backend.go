package cache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Backend stores encoded entries by key, each with a time to live.
type Backend interface {
	// Get returns the value stored under key, nil when there is none (or it
	// expired).
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores val under key for ttl; ErrTooLarge when val is above the
	// backend's cap per entry.
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
}

// Memory is the in-process backend (tollgate run, a single replica): a
// least-recently-used map capped in bytes, entries expiring after their TTL.
type Memory struct {
	mu       sync.Mutex
	ll       *list.List // front: most recently used
	m        map[string]*list.Element
	size     int64
	capBytes int64
	maxEntry int64
	now      func() time.Time
}

type memItem struct {
	key     string
	val     []byte
	expires time.Time
}

var _ Backend = (*Memory)(nil)

// Default caps of the in-process backend.
const (
	DefaultMemoryBytes = 64 << 20
	DefaultMaxEntry    = 1 << 20
)

// NewMemory returns an in-process backend holding at most capBytes of keys
// and values (0: DefaultMemoryBytes), no entry above maxEntry bytes (0:
// DefaultMaxEntry); now is its clock (nil: time.Now).
func NewMemory(capBytes, maxEntry int64, now func() time.Time) *Memory {
	if capBytes <= 0 {
		capBytes = DefaultMemoryBytes
	}
	if maxEntry <= 0 {
		maxEntry = DefaultMaxEntry
	}
	if now == nil {
		now = time.Now
	}
	return &Memory{ll: list.New(), m: map[string]*list.Element{}, capBytes: capBytes, maxEntry: min(maxEntry, capBytes), now: now}
}

// Get returns key's value unless it expired.
func (c *Memory) Get(_ context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[key]
	if !ok {
		return nil, nil
	}
	it := el.Value.(*memItem)
	if !c.now().Before(it.expires) {
		c.remove(el)
		return nil, nil
	}
	c.ll.MoveToFront(el)
	return it.val, nil
}

// Set stores val under key, evicting the least recently used entries (expired
// ones first met) until the cap holds.
func (c *Memory) Set(_ context.Context, key string, val []byte, ttl time.Duration) error {
	n := int64(len(key) + len(val))
	if n > c.maxEntry {
		return ErrTooLarge
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[key]; ok {
		c.remove(el)
	}
	it := &memItem{key: key, val: val, expires: c.now().Add(ttl)}
	c.m[key] = c.ll.PushFront(it)
	c.size += n
	for c.size > c.capBytes {
		c.remove(c.ll.Back())
	}
	return nil
}

// Len is the number of entries held (expired ones not yet evicted included).
func (c *Memory) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func (c *Memory) remove(el *list.Element) {
	it := el.Value.(*memItem)
	c.ll.Remove(el)
	delete(c.m, it.key)
	c.size -= int64(len(it.key) + len(it.val))
}
