package cache

import (
	"context"
	"sync"
	"time"
)

// MemoryIndex is the in-process semantic index (tollgate run): a linear scan
// of each namespace's vectors by cosine similarity, at most perNS vectors a
// namespace (the oldest dropped first), expired ones skipped and dropped.
type MemoryIndex struct {
	mu    sync.Mutex
	ns    map[string][]memVec
	perNS int
	now   func() time.Time
}

type memVec struct {
	vec     []float32
	key     string
	expires time.Time
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
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	vs := m.ns[ns]
	live := vs[:0]
	best, bestKey := -2.0, ""
	for _, v := range vs {
		if !now.Before(v.expires) {
			continue
		}
		live = append(live, v)
		if s := cosine(vec, v.vec); s > best {
			best, bestKey = s, v.key
		}
	}
	clear(vs[len(live):])
	m.ns[ns] = live
	if len(live) == 0 {
		delete(m.ns, ns)
	}
	if bestKey == "" || best < threshold {
		return "", 0, false, nil
	}
	return bestKey, best, true, nil
}

// Add indexes vec (replacing the vector of the same key).
func (m *MemoryIndex) Add(_ context.Context, ns string, vec []float32, key string, expires time.Time) error {
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
	m.ns[ns] = append(vs, memVec{vec: append([]float32(nil), vec...), key: key, expires: expires})
	return nil
}
