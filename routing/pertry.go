package routing

import "slices"

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

