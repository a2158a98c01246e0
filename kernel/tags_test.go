package kernel

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTags(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  string
	}{
		{in: "", want: nil},
		{in: "feature=search", want: []string{"feature=search"}},
		{in: " feature=search , env=prod", want: []string{"env=prod", "feature=search"}},
		{in: "a.b:c-d_e=x=y", want: []string{"a.b:c-d_e=x=y"}},
		{in: "feature", bad: "not name=value"},
		{in: "feature=", bad: "must be 1 to 128"},
		{in: "=search", bad: "must be 1 to 64"},
		{in: "feat ure=search", bad: "may hold only letters"},
		{in: "feature=se arch", bad: "printable ASCII"},
		{in: "feature=é", bad: "printable ASCII"},
		{in: "a=1,a=2", bad: "a is given twice"},
		{in: "a=1,,b=2", bad: "not name=value"},
		{in: strings.Repeat("n", 65) + "=v", bad: "must be 1 to 64"},
		{in: "n=" + strings.Repeat("v", 129), bad: "must be 1 to 128"},
		{in: strings.TrimSuffix(strings.Repeat("a=1,", 17), ","), bad: "17 tags, at most 16"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTags(tc.in)
			if tc.bad != "" {
				require.ErrorIs(t, err, ErrBadTag)
				require.ErrorContains(t, err, tc.bad)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestMergeTags(t *testing.T) {
	defaults, err := TagsOf(map[string]string{"team": "search", "env": "dev"})
	require.NoError(t, err)
	require.Equal(t, []string{"env=dev", "team=search"}, defaults)
	over, err := ParseTags("feature=autocomplete,env=prod")
	require.NoError(t, err)
	require.Equal(t, []string{"env=prod", "feature=autocomplete", "team=search"}, MergeTags(defaults, over))
	require.Equal(t, defaults, MergeTags(defaults, nil))
	require.Equal(t, over, MergeTags(nil, over))
	_, err = TagsOf(map[string]string{"bad name": "x"})
	require.ErrorIs(t, err, ErrBadTag)
	require.Equal(t, "feature", TagName("feature=search"))
	require.Equal(t, "feature=search", TagScopeID("feature", "search"))
}

func TestTagBudgetIsOneMoreLevel(t *testing.T) {
	// Two keys' requests tagged feature=search share the tag's budget: the
	// tag refuses once its budget cannot hold a call, whichever key sends it.
	s := NewState()
	tag := Scope{Ref: ScopeRef{Kind: ScopeTag, ID: TagScopeID("feature", "search")}, Limits: &Limits{
		Budgets: []BudgetWindow{{Limit: 1000, Period: Period{Kind: PeriodTotal}}},
	}}
	admitted := 0
	for i := range 20 {
		r := request("t"+string(rune('a'+i)), &Limits{Shortfall: Reject}, nil)
		if i%2 == 1 {
			r.Scopes[0].Ref.ID = "k2"
		}
		r.Scopes = append(r.Scopes, tag)
		d := s.Admit(t0, r)
		if !d.Admitted {
			require.Equal(t, ReasonBudgetExceeded, d.Reason)
			require.Equal(t, tag.Ref, d.Scope)
			continue
		}
		admitted++
		_, ok := s.Settle(t0, r.ID, Usage{Input: 100, Output: 50}, StatusCompleted)
		require.True(t, ok)
	}
	require.Equal(t, 6, admitted, "150 a call, 1000 the tag's budget")
	spent, _ := s.Usage(tag.Ref, total, t0)
	require.Equal(t, Money(900), spent)
}
