package kernel

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReserveChoices(t *testing.T) {
	tests := []struct {
		name                 string
		max, def, choices    int64
		wantMax, wantDefault int64
	}{
		{"one choice: unchanged", 100, 0, 1, 100, 0},
		{"max_tokens times n", 100, 0, 3, 300, 0},
		{"default bound times n", 0, 50, 4, 0, 200},
		{"no bound: the kernel's default times n", 0, 0, 2, 0, 2 * DefaultOutputBound},
		{"saturates", math.MaxInt64 / 2, 0, 3, math.MaxInt64, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &AdmitRequest{MaxTokens: tt.max, DefaultMaxTokens: tt.def}
			ReserveChoices(req, tt.choices)
			require.Equal(t, tt.wantMax, req.MaxTokens)
			require.Equal(t, tt.wantDefault, req.DefaultMaxTokens)
		})
	}
}

func TestPerChoiceAndBudgetRefusal(t *testing.T) {
	require.Equal(t, int64(33), PerChoice(100, 3))
	require.Equal(t, int64(100), PerChoice(100, 0), "no choices count: one")
	require.Zero(t, PerChoice(2, 3), "less than a token each")

	team := ScopeRef{Kind: ScopeTeam, ID: "t1"}
	d := BudgetRefusal([]Scope{{Ref: team}, {Ref: ScopeRef{Kind: ScopeKey, ID: "k"}}})
	require.False(t, d.Admitted)
	require.Equal(t, ReasonBudgetExceeded, d.Reason)
	require.Equal(t, team, d.Scope)
	require.Equal(t, ReasonBudgetExceeded, BudgetRefusal(nil).Reason)
}
