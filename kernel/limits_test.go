package kernel

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestLimitsValidate(t *testing.T) {
	good := Limits{
		Budgets: []BudgetWindow{{Limit: Dollar, Period: Period{Kind: PeriodRolling, Every: time.Hour}}, {Limit: 0, Period: daily}},
		RPM:     1, TPM: 2, MaxParallel: 3, Models: []string{"a"}, Mode: Estimate, Shortfall: Reject,
	}
	require.NoError(t, good.Validate())
	require.NoError(t, (&Limits{}).Validate())

	tests := []struct {
		name   string
		mutate func(l *Limits)
		period bool // also wraps ErrBadPeriod
	}{
		{"negative rpm", func(l *Limits) { l.RPM = -1 }, false},
		{"negative tpm", func(l *Limits) { l.TPM = -1 }, false},
		{"negative parallel", func(l *Limits) { l.MaxParallel = -1 }, false},
		{"unknown mode", func(l *Limits) { l.Mode = 7 }, false},
		{"unknown shortfall", func(l *Limits) { l.Shortfall = 7 }, false},
		{"empty model", func(l *Limits) { l.Models = []string{"a", ""} }, false},
		{"negative budget", func(l *Limits) { l.Budgets[1].Limit = -1 }, false},
		{"rolling without every", func(l *Limits) { l.Budgets[0].Period.Every = 0 }, true},
		{"unknown period kind", func(l *Limits) { l.Budgets[1].Period.Kind = 9 }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := good
			l.Budgets = append([]BudgetWindow(nil), good.Budgets...)
			tt.mutate(&l)
			err := l.Validate()
			require.ErrorIs(t, err, ErrBadLimits)
			if tt.period {
				require.ErrorIs(t, err, ErrBadPeriod)
			}
		})
	}
}

func TestNames(t *testing.T) {
	for k := ScopeGlobal; k <= ScopeKey; k++ {
		b, err := k.MarshalText()
		require.NoError(t, err)
		var back ScopeKind
		require.NoError(t, back.UnmarshalText(b))
		require.Equal(t, k, back)
	}
	require.Equal(t, "key:k1", keyRef.String())
	require.Equal(t, "global", globalRef.String())
	require.Equal(t, "ScopeKind(9)", ScopeKind(9).String())
	require.Equal(t, "budget_exceeded", ReasonBudgetExceeded.String())
	require.Equal(t, "duplicate", ReasonDuplicate.String())
	require.Equal(t, "expired", StatusExpired.String())
	require.Equal(t, "estimate", Estimate.String())
	require.Equal(t, "reject", Reject.String())

	b, err := json.Marshal(ScopeRef{Kind: ScopeCustomer, ID: "c1"})
	require.NoError(t, err)
	require.JSONEq(t, `{"kind":"customer","id":"c1"}`, string(b))
	var ref ScopeRef
	require.NoError(t, json.Unmarshal([]byte(`{"kind":5,"id":"k1"}`), &ref))
	require.Equal(t, keyRef, ref)

	var k ScopeKind
	require.ErrorIs(t, k.UnmarshalText([]byte("tenant")), ErrBadEnum)
	var m BudgetMode
	require.NoError(t, m.UnmarshalJSON([]byte(`"estimate"`)))
	require.Equal(t, Estimate, m)
	require.NoError(t, m.UnmarshalJSON([]byte(`0`)))
	require.Equal(t, Strict, m)
	require.ErrorIs(t, m.UnmarshalJSON([]byte(`2`)), ErrBadEnum)
	require.ErrorIs(t, m.UnmarshalJSON([]byte(`"loose"`)), ErrBadEnum)
	var sf Shortfall
	require.NoError(t, sf.UnmarshalText([]byte("reject")))
	require.Equal(t, Reject, sf)
	var pk PeriodKind
	require.NoError(t, pk.UnmarshalText([]byte("weekly")))
	require.Equal(t, PeriodWeekly, pk)
}
