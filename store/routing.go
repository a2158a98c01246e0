package store

import (
	"fmt"
	"slices"
	"time"
)

// Routing strategies of a model group: how the router picks among the
// deployments that are healthy and under their limits.
const (
	RoutingWeighted  = "weighted"   // random, in proportion to the weights (default)
	RoutingLeastBusy = "least-busy" // fewest requests in flight
	RoutingLatency   = "latency"    // lowest recent time to first byte (EWMA)
	RoutingUsage     = "usage"      // most rpm/tpm headroom left
)

// RoutingStrategies lists the strategies, default first.
var RoutingStrategies = []string{RoutingWeighted, RoutingLeastBusy, RoutingLatency, RoutingUsage}

// Routing defaults, documented in docs/admin-api.md.
const (
	DefaultRetries          = 2
	DefaultCooldown         = 30 * time.Second
	DefaultAllowedFails     = 3
	FailWindow              = time.Minute // allowed_fails count within this window
	DefaultTimeout          = 600 * time.Second
	DefaultFirstByteTimeout = 60 * time.Second
	DefaultConnectTimeout   = 5 * time.Second
	// MaxRetries bounds retries: every attempt may hold a reservation.
	MaxRetries = 10
)

// GroupRouting is how a model group routes: its strategy, retries and
// fallback groups (embedded in ModelGroup).
type GroupRouting struct {
	Routing                string   `json:"routing,omitempty"`
	Retries                *int32   `json:"retries,omitempty"` // nil: DefaultRetries
	Fallbacks              []string `json:"fallbacks,omitempty"`
	ContextWindowFallbacks []string `json:"context_window_fallbacks,omitempty"`
	ContentPolicyFallbacks []string `json:"content_policy_fallbacks,omitempty"`
}

// RetryCount is the number of retries after the first attempt.
func (g *GroupRouting) RetryCount() int {
	if g.Retries == nil {
		return DefaultRetries
	}
	return int(*g.Retries)
}

// Validate checks the strategy, the retry count and the fallback lists
// (no group falls back to itself; no name twice in a list).
func (g *GroupRouting) Validate(self string) error {
	if g.Routing != "" && !slices.Contains(RoutingStrategies, g.Routing) {
		return fmt.Errorf("routing: %q is not one of %v", g.Routing, RoutingStrategies)
	}
	if g.Retries != nil && (*g.Retries < 0 || *g.Retries > MaxRetries) {
		return fmt.Errorf("retries: must be 0 to %d", MaxRetries)
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"fallbacks", g.Fallbacks}, {"context_window_fallbacks", g.ContextWindowFallbacks}, {"content_policy_fallbacks", g.ContentPolicyFallbacks}} {
		for i, id := range l.ids {
			if id == self {
				return fmt.Errorf("%s[%d]: a model group cannot fall back to itself", l.name, i)
			}
			if slices.Contains(l.ids[:i], id) {
				return fmt.Errorf("%s: %q is listed twice", l.name, id)
			}
		}
	}
	return nil
}

// FallbackGroups is every group the routing names, each once.
func (g *GroupRouting) FallbackGroups() []string {
	var out []string
	for _, l := range [][]string{g.Fallbacks, g.ContextWindowFallbacks, g.ContentPolicyFallbacks} {
		for _, id := range l {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	return out
}

// DeploymentPolicy is how a deployment is taken out of rotation and how long
// an attempt on it may take (embedded in Deployment). Zero fields take the
// defaults above.
type DeploymentPolicy struct {
	Cooldown         time.Duration `json:"cooldown,omitempty"`
	AllowedFails     int32         `json:"allowed_fails,omitempty"`
	Timeout          time.Duration `json:"timeout,omitempty"`
	FirstByteTimeout time.Duration `json:"first_byte_timeout,omitempty"`
	ConnectTimeout   time.Duration `json:"connect_timeout,omitempty"`
}

// Validate checks that no field is negative and that the first-byte timeout
// does not exceed the whole one.
func (p *DeploymentPolicy) Validate() error {
	if p.Cooldown < 0 || p.AllowedFails < 0 || p.Timeout < 0 || p.FirstByteTimeout < 0 || p.ConnectTimeout < 0 {
		return fmt.Errorf("cooldown, allowed_fails and timeouts must not be negative")
	}
	if p.Timeout > 0 && p.FirstByteTimeout > p.Timeout {
		return fmt.Errorf("first_byte_timeout: must not exceed timeout")
	}
	return nil
}

// WithDefaults returns p with every zero field set to its default.
func (p DeploymentPolicy) WithDefaults() DeploymentPolicy {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&p.Cooldown, DefaultCooldown)
	def(&p.Timeout, DefaultTimeout)
	def(&p.FirstByteTimeout, min(DefaultFirstByteTimeout, p.Timeout))
	def(&p.ConnectTimeout, DefaultConnectTimeout)
	if p.AllowedFails == 0 {
		p.AllowedFails = DefaultAllowedFails
	}
	return p
}
