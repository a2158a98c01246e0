package gateway

import (
	"sync"
	"sync/atomic"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// maxPassNames bounds the names a pass-the-name group remembers: client
// names are unbounded, so past this many each is built per request.
const maxPassNames = 4096

// passName is what a pass-the-name group (store.ModelGroup's
// UpstreamModelFromRequest) needs to serve a client's name: the provider
// type and free flag of each target (for pricing), the price table, and the
// entries built so far.
type passName struct {
	providers []store.ProviderType // by target index
	free      []bool
	prices    map[string]kernel.Price
	built     sync.Map // name → *modelEntry
	count     atomic.Int32
}

// forName returns the entry that serves name: m itself unless m is a
// pass-the-name group and name is not the group's own; otherwise m's
// deployments with name as their provider model, each priced under name
// (store.DeploymentPrice: a name nobody priced is Unpriced, refused under
// strict budgets).
func (m *modelEntry) forName(name string) *modelEntry {
	pn := m.pass
	if pn == nil || name == m.info.ID || len(m.targets) == 0 {
		return m
	}
	if e, ok := pn.built.Load(name); ok {
		return e.(*modelEntry)
	}
	out := &modelEntry{info: m.info, weights: m.weights, targets: make([]*extproc.Target, len(m.targets))}
	for i, t := range m.targets {
		c := *t
		c.ProviderModel = name
		d := store.Deployment{ProviderModel: name, Free: pn.free[i]}
		c.Price, _, _, _ = store.DeploymentPrice("", &d, pn.providers[i], func(n string) (kernel.Price, bool) {
			p, ok := pn.prices[n]
			return p, ok
		})
		out.targets[i] = &c
	}
	if m.group != nil {
		g := *m.group
		g.Deployments = make([]*extproc.Deployment, len(m.group.Deployments))
		for i, d := range m.group.Deployments {
			c := *d
			for j, t := range m.targets {
				if t == d.Target {
					c.Target = out.targets[j]
				}
			}
			g.Deployments[i] = &c
		}
		out.group = &g
	}
	if pn.count.Add(1) <= maxPassNames {
		if e, loaded := pn.built.LoadOrStore(name, out); loaded {
			return e.(*modelEntry)
		}
	}
	return out
}
