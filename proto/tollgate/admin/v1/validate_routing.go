package adminv1

import (
	"fmt"
	"slices"
)

// Validation of the routing fields of Deployment and Model (the admin server
// checks what needs the store: that fallback groups exist).

// RoutingStrategies are the values of Model.routing ("" is "weighted").
var RoutingStrategies = []string{"weighted", "least-busy", "latency", "usage"}

// maxRetries bounds Model.retries.
const maxRetries = 10

// DeploymentRoutingPaths are the update_mask paths of a deployment's routing
// policy.
var DeploymentRoutingPaths = []string{"cooldown", "allowed_fails", "timeout", "first_byte_timeout", "connect_timeout"}

// ModelRoutingPaths are the update_mask paths of a model group's routing.
var ModelRoutingPaths = []string{"routing", "retries", "fallbacks", "context_window_fallbacks", "content_policy_fallbacks"}

func (d *Deployment) validateRouting() error {
	if d.GetAllowedFails() < 0 {
		return bad("deployment.allowed_fails", "must not be negative")
	}
	return first(duration("deployment.cooldown", d.GetCooldown()), duration("deployment.timeout", d.GetTimeout()),
		duration("deployment.first_byte_timeout", d.GetFirstByteTimeout()),
		duration("deployment.connect_timeout", d.GetConnectTimeout()))
}

func (m *Model) validateRouting() error {
	if r := m.GetRouting(); r != "" && !slices.Contains(RoutingStrategies, r) {
		return bad("model.routing", "must be one of %v", RoutingStrategies)
	}
	if m.Retries != nil && (m.GetRetries() < 0 || m.GetRetries() > maxRetries) {
		return bad("model.retries", "must be 0 to %d", maxRetries)
	}
	for _, l := range []struct {
		name string
		ids  []string
	}{{"fallbacks", m.GetFallbacks()}, {"context_window_fallbacks", m.GetContextWindowFallbacks()}, {"content_policy_fallbacks", m.GetContentPolicyFallbacks()}} {
		for i, v := range l.ids {
			if err := id(fmt.Sprintf("model.%s[%d]", l.name, i), v); err != nil {
				return err
			}
		}
	}
	return nil
}
