package routing

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Per-try routing's pure parts (docs/envoy.md, "Retries across
// deployments"): which groups are routed per try, the order of the tries,
// the masks that leave cooling deployments out of it. The xDS builder
// emits routes from them and the processor picks among those routes with
// the same functions, so the two cannot disagree.

// MaxFallbackDepth bounds how many fallback groups a chain follows.
const MaxFallbackDepth = 3

// PerTry reports whether a model group is routed per try: it retries, and
// a retry has somewhere else to go (another deployment, or a fallback
// group). Other groups keep one route and cluster per deployment.
func PerTry(retries, deployments, fallbacks int) bool {
	return retries > 0 && (deployments > 1 || fallbacks > 0)
}

// TryTimeout is the timeout of one try on a deployment until its response
// starts (Envoy's per_try_timeout; the built-in data plane reads the same
// from the xDS): the deployment's first-byte timeout, else the data plane's
// default per-try timeout dataPlane; 0 is none. A try's whole time is bounded
// by the route's timeout (the deployment's Timeout), which long streams need.
func TryTimeout(firstByte, dataPlane time.Duration) time.Duration {
	return cmp.Or(firstByte, dataPlane)
}

// TryMaskWidth is how many deployments after the first a per-try route's
// skip mask covers: bit i-1 leaves out the order's i-th deployment. Later
// ones are always in the order (a group with more has 2^TryMaskWidth routes
// per first deployment, not more).
const TryMaskWidth = 4

// TryOrder is the order of the tries of a request whose first try goes to
// first: first, then the deployments of the group chain (chain, in order,
// each once).
func TryOrder(first string, chain [][]string) []string {
	order := []string{first}
	for _, deps := range chain {
		for _, d := range deps {
			if !slices.Contains(order, d) {
				order = append(order, d)
			}
		}
	}
	return order
}

// Skip is the mask of TryKey that leaves out of order the deployments for
// which out is true (within TryMaskWidth).
func Skip(order []string, out func(string) bool) uint {
	var m uint
	for i := 1; i < len(order) && i <= TryMaskWidth; i++ {
		if out(order[i]) {
			m |= 1 << (i - 1)
		}
	}
	return m
}

// Masks is how many skip masks the per-try routes of order have.
func Masks(order []string) uint { return 1 << min(len(order)-1, TryMaskWidth) }

// Skipped is order without the deployments skip leaves out.
func Skipped(order []string, skip uint) []string {
	out := make([]string, 0, len(order))
	for i, d := range order {
		if i == 0 || i > TryMaskWidth || skip&(1<<(i-1)) == 0 {
			out = append(out, d)
		}
	}
	return out
}

// GroupChain is the order in which a group and its fallback groups are
// tried: the group, then each fallback depth first (its own fallbacks
// after it), each group once, at most 1+MaxFallbackDepth groups.
// fallbacks returns a group's fallbacks (nil for an unknown group).
func GroupChain(group string, fallbacks func(string) []string) []string {
	chain := []string{group}
	var visit func(names []string)
	visit = func(names []string) {
		for _, n := range names {
			if len(chain) > MaxFallbackDepth || slices.Contains(chain, n) {
				continue
			}
			chain = append(chain, n)
			visit(fallbacks(n))
		}
	}
	visit(fallbacks(group))
	return chain
}

// RedirectsFallbacks reports whether a group's per-try routes carry the
// internal redirect policy: it names context-window or content-policy
// fallbacks.
func RedirectsFallbacks(contextWindow, contentPolicy int) bool {
	return contextWindow+contentPolicy > 0
}

// PerTry reports whether g is routed per try (PerTry of its policy).
func (g *Group) PerTry() bool { return PerTry(g.Retries, len(g.Deployments), g.FallbackCount()) }

// RedirectsFallbacks reports whether g's per-try routes carry the fallback
// redirect policy (RedirectsFallbacks of its lists).
func (g *Group) RedirectsFallbacks() bool {
	return RedirectsFallbacks(len(g.ContextWindowFallbacks), len(g.ContentPolicyFallbacks))
}

// chain resolves g's group chain (GroupChain) for the request's key: the
// names in order, the groups by name (an unresolved one is missing) and
// whether every one resolved.
func (r *Route) chain(ctx context.Context, g *Group) (names []string, byName map[string]*Group, all bool) {
	byName = map[string]*Group{g.Name: g}
	all = true
	names = GroupChain(g.Name, func(name string) []string {
		fg, found := byName[name]
		if !found {
			if fg, _ = r.env.Groups.Group(ctx, name); fg == nil {
				all = false
				return nil
			}
			byName[name] = fg
		}
		return fg.Fallbacks
	})
	return names, byName, all
}

// OpenTry routes an upstream try that landed on deployment dep: it is found
// in the requested group (Groups[0]) or its group chain, and Groups runs to
// the group holding it. order is the number of deployments in the try order
// (the chain's). The error is an *UnavailableError when dep is none of them
// (the data plane's xDS and the catalog disagree: an update between the
// two).
func (r *Route) OpenTry(ctx context.Context, dep string) (d *Deployment, order int, err error) {
	g := r.Groups[0]
	names, byName, _ := r.chain(ctx, g)
	r.Groups = r.Groups[:0]
	seen := map[string]bool{}
	for _, name := range names {
		if cg := byName[name]; cg != nil {
			for _, d := range cg.Deployments {
				seen[d.Target.Deployment] = true
			}
		}
	}
	for _, name := range names {
		cg := byName[name]
		if cg == nil {
			continue
		}
		r.Groups = append(r.Groups, cg)
		i := slices.IndexFunc(cg.Deployments, func(d *Deployment) bool { return d.Target.Deployment == dep })
		if i < 0 {
			continue
		}
		r.one[0] = cg.Deployments[i]
		r.cands = r.one[:]
		return r.one[0], len(seen), nil
	}
	return nil, len(seen), &UnavailableError{}
}

// TrySkip is the skip mask of the per-try route of the request routed to
// deployment first of the current group: it leaves out of the try order
// (the group chain's deployments, as the xDS builds it) those cooling down
// now. 0 when a group of the chain cannot be resolved for this key (the
// orders would differ).
func (r *Route) TrySkip(ctx context.Context, first string) uint {
	names, byName, all := r.chain(ctx, r.Group())
	if !all {
		return 0
	}
	chain := make([][]string, 0, len(names))
	for _, name := range names {
		deps := make([]string, len(byName[name].Deployments))
		for i, d := range byName[name].Deployments {
			deps[i] = d.Target.Deployment
		}
		chain = append(chain, deps)
	}
	now := r.env.Clock.Now()
	return Skip(TryOrder(first, chain), func(id string) bool { return r.env.Health.Cooling(id, now) })
}

// TryRetried reports whether the data plane's retry policy retries try n
// (1: the first) of a try order of order deployments that failed with
// status: a status it retries, a retry left in the requested group's
// budget (the route's num_retries) and a deployment left in the order.
func (r *Route) TryRetried(n, order, status int) bool {
	return Classify(status, nil) == FailRetryable && n <= r.Groups[0].Retries && n < order
}
