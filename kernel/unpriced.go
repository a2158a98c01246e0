package kernel

// UnpricedRefusal is the rule for a model without a price (req.Price.Unpriced):
// under a strict budget (the request's mode is Strict, with either shortfall
// policy, and some scope of the request has a budget window) it is refused
// with ReasonUnpriced, Scope the first scope with a budget window, because
// its worst case cannot be bounded and its cost would be a silent $0. Under
// an estimate budget, or when no scope has a budget at all, it is admitted
// (and the ledger row marked unpriced). State.Admit applies it before any
// other check; shared counters must apply it the same way.
func UnpricedRefusal(req *AdmitRequest) (Decision, bool) {
	if !req.Price.Unpriced || len(req.Scopes) == 0 {
		return Decision{}, false
	}
	if lim := req.Scopes[0].Limits; lim != nil && lim.Mode != Strict {
		return Decision{}, false
	}
	for _, sc := range req.Scopes {
		if sc.Limits != nil && len(sc.Limits.Budgets) > 0 {
			return Decision{Reason: ReasonUnpriced, Scope: sc.Ref}, true
		}
	}
	return Decision{}, false
}
