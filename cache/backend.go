package cache

import (
	"context"
	"sync"
	"time"
)

// Backend stores encoded entries by key, each with a time to live.
type Backend interface {
	// Get returns the value stored under key, nil when there is none (or it
	// expired).
	Get(ctx context.Context, key Key) ([]byte, error)
	// Set stores val under key for ttl; ErrTooLarge when val is above the
	// backend's cap per entry. The backend keeps val: the caller must not
	// change it afterwards.
	Set(ctx context.Context, key Key, val []byte, ttl time.Duration) error
}

// Memory is the in-process backend (tollgate run, a single replica): a
// least-recently-used map capped in bytes, entries expiring after their TTL.
//
// The cap counts what an entry holds in the heap: its value and a fixed
// entryOverhead for its key, its slot and its map entry, so that many small
// entries cannot hold several times the cap. The entries live in a slab of
// fixed-size chunks linked by index (no allocation per entry but its value;
// a growing cache adds a chunk rather than copying every slot into a slice
// twice the size), the least recently used at the list's back.
type Memory struct {
	mu       sync.Mutex
	m        map[Key]int32 // index of the entry's slot
	chunks   [][]memItem   // the slots, chunkLen a chunk; slot 0 is the list's sentinel: next the front, prev the back
	slots    int32         // slots in use or freed (the next new slot's index)
	free     int32         // the first free slot (0: none), linked through next
	size     int64
	capBytes int64
	maxEntry int64
	now      func() time.Time
}

type memItem struct {
	key        Key
	val        []byte
	expires    int64 // Unix nanoseconds
	prev, next int32
}

// chunkBits: a chunk of the slab holds 1 << chunkBits slots (64 KiB).
const (
	chunkBits = 10
	chunkLen  = 1 << chunkBits
)

// slot is slot i of the slab.
func (c *Memory) slot(i int32) *memItem { return &c.chunks[i>>chunkBits][i&(chunkLen-1)] }

// entryOverhead is what an entry of Memory holds beside its value: its slot
// in the slab (72 bytes) and its map entry (the key and the index, about 40
// bytes with the map's own share), rounded up.
const entryOverhead = 128

var _ Backend = (*Memory)(nil)

// Default caps of the in-process backend.
const (
	DefaultMemoryBytes = 64 << 20
	DefaultMaxEntry    = 1 << 20
)

// NewMemory returns an in-process backend holding at most capBytes of
// entries, each counted as its value and entryOverhead (0:
// DefaultMemoryBytes), no value above maxEntry bytes (0: DefaultMaxEntry);
// now is its clock (nil: time.Now).
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
	return &Memory{m: map[Key]int32{}, chunks: [][]memItem{make([]memItem, chunkLen)}, slots: 1, capBytes: capBytes, maxEntry: min(maxEntry, capBytes-entryOverhead), now: now}
}

// Get returns key's value unless it expired.
func (c *Memory) Get(_ context.Context, key Key) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, ok := c.m[key]
	if !ok {
		return nil, nil
	}
	it := c.slot(i)
	if c.now().UnixNano() >= it.expires {
		c.remove(i)
		return nil, nil
	}
	c.unlink(i)
	c.pushFront(i)
	return it.val, nil
}

// Set stores val under key, evicting the least recently used entries until
// the cap holds.
func (c *Memory) Set(_ context.Context, key Key, val []byte, ttl time.Duration) error {
	if int64(len(val)) > c.maxEntry {
		return ErrTooLarge
	}
	expires := c.now().Add(ttl).UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if i, ok := c.m[key]; ok {
		c.remove(i)
	}
	i := c.free
	if i != 0 {
		c.free = c.slot(i).next
	} else {
		if int(c.slots)>>chunkBits == len(c.chunks) {
			c.chunks = append(c.chunks, make([]memItem, chunkLen))
		}
		i = c.slots
		c.slots++
	}
	*c.slot(i) = memItem{key: key, val: val, expires: expires}
	c.pushFront(i)
	c.m[key] = i
	c.size += int64(len(val)) + entryOverhead
	for c.size > c.capBytes {
		c.remove(c.slot(0).prev)
	}
	return nil
}

// Len is the number of entries held (expired ones not yet evicted included).
func (c *Memory) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Size is what the entries held count for against the cap.
func (c *Memory) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

func (c *Memory) pushFront(i int32) {
	it, head := c.slot(i), c.slot(0)
	it.prev, it.next = 0, head.next
	c.slot(head.next).prev = i
	head.next = i
}

func (c *Memory) unlink(i int32) {
	it := c.slot(i)
	c.slot(it.prev).next = it.next
	c.slot(it.next).prev = it.prev
}

// remove drops slot i's entry and puts the slot on the free list.
func (c *Memory) remove(i int32) {
	c.unlink(i)
	it := c.slot(i)
	delete(c.m, it.key)
	c.size -= int64(len(it.val)) + entryOverhead
	*it = memItem{next: c.free}
	c.free = i
}
