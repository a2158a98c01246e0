package kernel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestUnpricedRefusal(t *testing.T) {
	budget := &Limits{Budgets: []BudgetWindow{{Limit: 1_000_000_000, Period: total}}}
	unpriced := Price{Unpriced: true}
	for _, tc := range []struct {
		name      string
		key, team *Limits
		price     Price
		refused   bool
		scope     ScopeRef
	}{
		{"strict clamp key budget", budget, nil, unpriced, true, keyRef},
		{"strict reject", &Limits{Budgets: budget.Budgets, Shortfall: Reject}, nil, unpriced, true, keyRef},
		{"strict key, team budget", &Limits{RPM: 10}, budget, unpriced, true, teamRef},
		{"no limits on the key, team budget", nil, budget, unpriced, true, teamRef},
		{"estimate", &Limits{Budgets: budget.Budgets, Mode: Estimate}, budget, unpriced, false, ScopeRef{}},
		{"no budget anywhere", &Limits{RPM: 10}, nil, unpriced, false, ScopeRef{}},
		{"priced", budget, nil, onePrice, false, ScopeRef{}},
		{"explicitly free", budget, nil, Price{}, false, ScopeRef{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewState()
			req := request("r1", tc.key, tc.team)
			req.Price = tc.price
			d := s.Admit(t0, req)
			require.Equal(t, !tc.refused, d.Admitted)
			if tc.refused {
				require.Equal(t, ReasonUnpriced, d.Reason)
				require.Equal(t, tc.scope, d.Scope)
				// A refusal changes nothing: the id is free again.
				req.Price = onePrice
				req.Scopes[0].Limits, req.Scopes[1].Limits = nil, nil
				require.True(t, s.Admit(t0, req).Admitted)
			}
		})
	}
}

// TestUnpricedSettlementsAreMarked: a served unpriced request settles, or
// expires, with Unpriced set and a zero cost; a priced one without.
func TestUnpricedSettlementsAreMarked(t *testing.T) {
	s := NewState()
	req := request("served", &Limits{Mode: Estimate}, nil)
	req.Price = Price{Unpriced: true}
	require.True(t, s.Admit(t0, req).Admitted)
	st, ok := s.Settle(t0.Add(time.Second), "served", Usage{Input: 10, Output: 5}, StatusCompleted)
	require.True(t, ok)
	require.True(t, st.Unpriced)
	require.Zero(t, st.Cost)

	req = request("lost", nil, nil)
	req.Price = Price{Unpriced: true}
	require.True(t, s.Admit(t0, req).Admitted)
	priced := request("priced", nil, nil)
	require.True(t, s.Admit(t0, priced).Admitted)
	expired := s.Expire(t0.Add(DefaultLease))
	require.Len(t, expired, 2)
	for _, e := range expired {
		require.Equal(t, e.ID == "lost", e.Unpriced, e.ID)
	}
}
