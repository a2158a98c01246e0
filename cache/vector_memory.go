package cache

import (
	"context"
	"slices"
	"sync"
	"time"
)

// MemoryIndex is the in-process semantic index (tollgate run): a linear scan
// of each namespace's vectors by cosine similarity, at most perNS vectors a
// namespace (the oldest dropped first), expired ones skipped and dropped.
// Vectors are kept at unit length, so that the scan's cosine similarity is
// one dot product per vector (no norms).
type MemoryIndex struct {
	mu    sync.Mutex
	ns    map[string][]memVec
	perNS int
	now   func() time.Time
}

type memVec struct {
	vec     []float32 // unit length
	key     string
	expires int64 // Unix nanoseconds
}

var _ Index = (*MemoryIndex)(nil)

// DefaultPerNamespace bounds the vectors a MemoryIndex keeps per namespace.
const DefaultPerNamespace = 4096

// NewMemoryIndex returns an in-process index keeping at most perNS vectors
// a namespace (0: DefaultPerNamespace); now is its clock (nil: time.Now).
func NewMemoryIndex(perNS int, now func() time.Time) *MemoryIndex {
	if perNS <= 0 {
		perNS = DefaultPerNamespace
	}
	if now == nil {
		now = time.Now
	}
	return &MemoryIndex{ns: map[string][]memVec{}, perNS: perNS, now: now}
}

// Nearest scans ns for the most similar live vector.
func (m *MemoryIndex) Nearest(_ context.Context, ns string, vec []float32, threshold float64) (string, float64, bool, error) {
	q := unit(vec)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now().UnixNano()
	vs := m.ns[ns]
	best, bestKey, expired := -2.0, "", 0
	for i := range vs {
		v := &vs[i]
		if now >= v.expires {
			expired++
			continue
		}
		if s := dot(q, v.vec); s > best {
			best, bestKey = s, v.key
		}
	}
	if expired > 0 { // drop them (rarely: the scan itself writes nothing)
		live := slices.DeleteFunc(vs, func(v memVec) bool { return now >= v.expires })
		m.ns[ns] = live
		if len(live) == 0 {
			delete(m.ns, ns)
		}
	}
	if q == nil || bestKey == "" || best < threshold {
		return "", 0, false, nil
	}
	return bestKey, min(best, 1), true, nil // rounding may pass 1
}

// Add indexes vec (replacing the vector of the same key).
func (m *MemoryIndex) Add(_ context.Context, ns string, vec []float32, key string, expires time.Time) error {
	u := unit(vec)
	if u == nil {
		return nil // a zero vector is similar to nothing
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	vs := m.ns[ns]
	for i := range vs {
		if vs[i].key == key {
			vs = append(vs[:i], vs[i+1:]...)
			break
		}
	}
	if len(vs) >= m.perNS {
		vs = append(vs[:0], vs[len(vs)-m.perNS+1:]...)
	}
	m.ns[ns] = append(vs, memVec{vec: u, key: key, expires: expires.UnixNano()})
	return nil
}
