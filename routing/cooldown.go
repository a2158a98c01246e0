package routing

import "time"

// CooldownShare spreads cooldowns across the replicas of a processor (Redis
// when it is on): Publish is called when this replica takes a deployment out
// of rotation, and the share calls Router.Adopt with the other replicas'.
// Publish must not block the request path.
type CooldownShare interface {
	Publish(deployment string, until time.Time)
}

// SetShare makes r publish its cooldowns through s. Call it before serving.
func (r *Router) SetShare(s CooldownShare) { r.share = s }

// Adopt takes deployment id out of rotation until until, as another replica
// decided (not published again).
func (r *Router) Adopt(id string, until time.Time) {
	h := r.health(id)
	u := until.UnixNano()
	for {
		old := h.coolUntil.Load()
		if old >= u || h.coolUntil.CompareAndSwap(old, u) {
			return
		}
	}
}
