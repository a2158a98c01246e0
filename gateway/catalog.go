package gateway

import (
	"context"
	"math/rand/v2"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/internal/modelpattern"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
)

// Catalog serves extproc.Catalog from the current snapshot.
type Catalog struct {
	snap atomic.Pointer[Snapshot]
	now  func() time.Time
}

var (
	_ extproc.Catalog    = (*Catalog)(nil)
	_ extproc.TagCatalog = (*Catalog)(nil)
)

// NewCatalog starts with an empty snapshot; Swap installs real ones.
func NewCatalog(now func() time.Time) *Catalog {
	c := &Catalog{now: now}
	c.snap.Store(&Snapshot{keys: map[string]*keyEntry{}, models: map[string]*modelEntry{}, customers: map[string]kernel.Scope{}})
	return c
}

// Swap installs a new snapshot.
func (c *Catalog) Swap(s *Snapshot) { c.snap.Store(s) }

// Snapshot returns the current snapshot.
func (c *Catalog) Snapshot() *Snapshot { return c.snap.Load() }

// Authenticate implements extproc.Catalog.
func (c *Catalog) Authenticate(_ context.Context, key string) (*extproc.Principal, error) {
	var h [secret.HashLen]byte
	e, ok := c.snap.Load().keys[string(secret.AppendHash(h[:0], key))] // no allocation
	if !ok || (!e.validUntil.IsZero() && !c.now().Before(e.validUntil)) {
		return nil, extproc.ErrUnauthorized
	}
	return &e.principal, nil
}

// Resolve implements extproc.Catalog: a weighted random deployment of the group.
func (c *Catalog) Resolve(_ context.Context, p *extproc.Principal, model string) (*extproc.Target, error) {
	s := c.snap.Load()
	m, ok := s.lookup(model)
	if !ok || len(m.targets) == 0 {
		return nil, extproc.ErrModelNotFound
	}
	m = m.forName(model)
	if !allowed(p, model, m.info.ID) {
		return nil, extproc.ErrModelNotAllowed
	}
	if len(m.targets) == 1 {
		return m.targets[0], nil
	}
	n := rand.IntN(m.weights[len(m.weights)-1])
	i := sort.SearchInts(m.weights, n+1)
	return m.targets[i], nil
}

// allowed reports whether every scope of the key lets it use the model the
// client named (requested) of group: a scope's model list may name either,
// exactly or by pattern ("claude-*"); an empty list allows all.
func allowed(p *extproc.Principal, requested, group string) bool {
	for _, sc := range p.Scopes {
		if sc.Limits == nil || len(sc.Limits.Models) == 0 {
			continue
		}
		if !slices.ContainsFunc(sc.Limits.Models, func(m string) bool {
			return modelpattern.Match(m, requested) || modelpattern.Match(m, group)
		}) {
			return false
		}
	}
	return true
}

// Models implements extproc.Catalog: the snapshot keeps them sorted.
func (c *Catalog) Models(_ context.Context, p *extproc.Principal) []extproc.ModelInfo {
	s := c.snap.Load()
	out := make([]extproc.ModelInfo, 0, len(s.served))
	for _, m := range s.served {
		if allowed(p, m.info.ID, m.info.ID) {
			out = append(out, m.info)
		}
	}
	return out
}

// TagScope implements extproc.TagCatalog: the scope of a tag with limits.
func (c *Catalog) TagScope(tag string) (kernel.Scope, bool) {
	sc, ok := c.snap.Load().tags[tag]
	return sc, ok
}

// Customer implements extproc.Catalog.
func (c *Catalog) Customer(_ context.Context, id string) (kernel.Scope, bool) {
	sc, ok := c.snap.Load().customers[id]
	return sc, ok
}
