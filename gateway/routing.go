package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/tollgate-ai/tollgate/accounting"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/xds"
)

var _ extproc.GroupCatalog = (*Catalog)(nil)

// ResolveGroup implements extproc.GroupCatalog: the processor routes among
// the group's deployments itself.
func (c *Catalog) ResolveGroup(_ context.Context, p *extproc.Principal, model string) (*extproc.Group, error) {
	m, ok := c.snap.Load().lookup(model)
	if !ok || m.group == nil {
		return nil, extproc.ErrModelNotFound
	}
	m = m.forName(model)
	if !allowed(p, model, m.info.ID) {
		return nil, extproc.ErrModelNotAllowed
	}
	return m.group, nil
}

// routedGroup is the router's view of group g served by targets (nil when
// none resolved).
func routedGroup(g *store.ModelGroup, targets []*extproc.Target, deps map[string]*store.Deployment) *extproc.Group {
	if len(targets) == 0 {
		return nil
	}
	out := &extproc.Group{
		Name:                   g.ID,
		Strategy:               extproc.ParseStrategy(g.Routing),
		Retries:                g.RetryCount(),
		Fallbacks:              g.Fallbacks,
		ContextWindowFallbacks: g.ContextWindowFallbacks,
		ContentPolicyFallbacks: g.ContentPolicyFallbacks,
	}
	for _, t := range targets {
		d := deps[t.Deployment]
		pol := d.WithDefaults()
		out.Deployments = append(out.Deployments, &extproc.Deployment{
			Target: t, Weight: d.Weight, RPM: d.RPM, TPM: d.TPM,
			Cooldown: pol.Cooldown, AllowedFails: int(pol.AllowedFails),
			Timeout: pol.Timeout, FirstByteTimeout: pol.FirstByteTimeout, ConnectTimeout: pol.ConnectTimeout,
		})
	}
	return extproc.NewGroup(out)
}

// cooldownSharer is implemented by counters shared by replicas (Redis):
// cooldowns spread through them like the limits do.
type cooldownSharer interface {
	PublishCooldown(id string, until time.Time)
	WatchCooldowns(ctx context.Context, every time.Duration, now func() time.Time, adopt func(id string, until time.Time))
}

// cooldownPoll is how often a replica reads the others' cooldowns.
const cooldownPoll = 250 * time.Millisecond

// shareCooldowns makes router publish its cooldowns through counters and
// adopt the other replicas', when the counters can (until ctx ends).
func shareCooldowns(ctx context.Context, wg *sync.WaitGroup, router *extproc.Router, counters accounting.Counters, now func() time.Time) {
	cs, ok := counters.(cooldownSharer)
	if !ok {
		return
	}
	router.SetShare(publishFunc(cs.PublishCooldown))
	wg.Add(1)
	go func() { defer wg.Done(); cs.WatchCooldowns(ctx, cooldownPoll, now, router.Adopt) }()
}

// publishFunc adapts a function to extproc.CooldownShare.
type publishFunc func(id string, until time.Time)

// Publish implements extproc.CooldownShare.
func (f publishFunc) Publish(id string, until time.Time) { f(id, until) }

// routingStates shows the router's view in the admin API.
type routingStates struct {
	r   *extproc.Router
	now func() time.Time
}

var _ admin.RoutingStates = routingStates{}

// DeploymentStates implements admin.RoutingStates.
func (s routingStates) DeploymentStates(context.Context) map[string]admin.DeploymentState {
	states := s.r.States(s.now())
	out := make(map[string]admin.DeploymentState, len(states))
	for id, st := range states {
		out[id] = admin.DeploymentState{CoolingUntil: st.CoolingUntil, ErrorRate: st.ErrorRate, Latency: st.Latency, InFlight: st.InFlight}
	}
	return out
}

// xdsGroups are the model groups as the xDS needs them for per-try routes
// (docs/envoy.md, "Retries across deployments"), by name.
func (s *Snapshot) xdsGroups() []xds.Group {
	var out []xds.Group
	for _, m := range s.served {
		g := m.group
		if g == nil {
			continue
		}
		xg := xds.Group{
			Name: g.Name, Retries: g.Retries, Fallbacks: g.Fallbacks,
			ContextWindowFallbacks: g.ContextWindowFallbacks, ContentPolicyFallbacks: g.ContentPolicyFallbacks,
		}
		for _, d := range g.Deployments {
			xg.Deployments = append(xg.Deployments, d.Target.Deployment)
		}
		out = append(out, xg)
	}
	return out
}
