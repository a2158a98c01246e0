package routing

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/upstream"
)

// Strategy is how a group balances among its available deployments.
type Strategy uint8

// Strategies (the names of store.RoutingStrategies).
const (
	StrategyWeighted  Strategy = iota // random in proportion to the weights
	StrategyLeastBusy                 // fewest requests in flight on this replica
	StrategyLatency                   // lowest time to first byte (EWMA); unmeasured first
	StrategyUsage                     // most rpm (then tpm) headroom left this minute
)

// ParseStrategy reads "weighted", "least-busy", "latency" or "usage" ("" and
// unknown names are weighted).
func ParseStrategy(s string) Strategy {
	switch s {
	case "least-busy":
		return StrategyLeastBusy
	case "latency":
		return StrategyLatency
	case "usage":
		return StrategyUsage
	default:
		return StrategyWeighted
	}
}

// Deployment is one deployment of a group and its routing policy.
type Deployment struct {
	Target       *upstream.Target
	Weight       int   // ≤ 0 counts as 1
	RPM, TPM     int64 // the provider's quota; 0: none
	Cooldown     time.Duration
	AllowedFails int
	// Timeout, FirstByteTimeout and ConnectTimeout bound one attempt; the
	// data plane applies them (xDS per-try timeouts, the edge the same).
	Timeout, FirstByteTimeout, ConnectTimeout time.Duration

	Scope kernel.Scope // the rpm/tpm scope; Limits nil when none
}

// Group is a model group as the router sees it. Build it with NewGroup; it is
// immutable afterwards and shared by concurrent requests.
type Group struct {
	Name                   string
	Strategy               Strategy
	Retries                int
	Fallbacks              []string
	ContextWindowFallbacks []string
	ContentPolicyFallbacks []string
	Deployments            []*Deployment
}

// NewGroup prepares g for routing (each deployment's limit scope) and returns it.
func NewGroup(g *Group) *Group {
	for _, d := range g.Deployments {
		d.Scope = kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeDeployment, ID: d.Target.Deployment}}
		if d.RPM > 0 || d.TPM > 0 {
			d.Scope.Limits = &kernel.Limits{RPM: d.RPM, TPM: d.TPM}
		}
		if d.Weight <= 0 {
			d.Weight = 1
		}
	}
	return g
}

// weightedPick returns an index of ds drawn in proportion to the weights.
func weightedPick(ds []*Deployment) int {
	total := 0
	for _, d := range ds {
		total += d.Weight
	}
	n := rand.IntN(total)
	for i, d := range ds {
		if n < d.Weight {
			return i
		}
		n -= d.Weight
	}
	return len(ds) - 1
}

// sortBy orders ds (in place) by key ascending, keeping the order of ties
// (which is the weighted draw).
func sortBy(ds []*Deployment, key func(*Deployment) int64) {
	slices.SortStableFunc(ds, func(a, b *Deployment) int { return cmp.Compare(key(a), key(b)) })
}

// FallbackCount counts the group's fallback groups of every kind, as the
// xDS does for routing.PerTry: a context-window or content-policy fallback is
// somewhere else to go (by the fallback redirect, extproc/routing.go).
func (g *Group) FallbackCount() int {
	return len(g.Fallbacks) + len(g.ContextWindowFallbacks) + len(g.ContentPolicyFallbacks)
}
