package kernel

// WithRun returns scopes with the scope of run right after the key (the
// first scope), and that scope's id: its owner, and its limits, are those of
// the first of the key and the team that has a run policy (Limits.Run);
// without a policy the run is owned by the key and only counted (for
// attribution). scopes is returned as is, with "", when run is empty or
// there are no scopes; otherwise the slice is new (a principal's is shared).
// Model requests (x-tollgate-run-id) and MCP tool calls build their run
// level here, so a run's budget covers both.
func WithRun(scopes []Scope, run string) ([]Scope, string) {
	if run == "" || len(scopes) == 0 {
		return scopes, ""
	}
	owner := scopes[0]
	for _, sc := range scopes {
		if (sc.Ref.Kind == ScopeKey || sc.Ref.Kind == ScopeTeam) && sc.Limits != nil && sc.Limits.Run != nil {
			owner = sc
			break
		}
	}
	rs := Scope{Ref: ScopeRef{Kind: ScopeRun, ID: RunScopeID(owner.Ref, run)}}
	if owner.Limits != nil && owner.Limits.Run != nil {
		rs.Limits = owner.Limits.Run.Limits()
	}
	out := make([]Scope, 0, len(scopes)+2)
	out = append(out, scopes[0], rs)
	return append(out, scopes[1:]...), rs.Ref.ID
}
