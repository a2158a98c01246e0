package cli

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestUpdateMask(t *testing.T) {
	keyFields := map[string]string{"alias": "alias", "meta": "metadata", "clear-meta": "metadata"}
	for _, tc := range []struct {
		name string
		set  []string
		want []string
	}{
		{name: "one field", set: []string{"alias"}, want: []string{"alias"}},
		{name: "two flags, one path", set: []string{"meta", "clear-meta"}, want: []string{"metadata"}},
		{name: "fields then limits", set: []string{"meta", "alias", "rpm", "budget", "budget-period"}, want: []string{"alias", "metadata", "limits.budgets", "limits.rpm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := map[string]bool{}
			for _, f := range tc.set {
				set[f] = true
			}
			mask, err := updateMask(set, keyFields, &limitsFlags{})
			require.NoError(t, err)
			require.Equal(t, tc.want, mask.GetPaths())
		})
	}
	_, err := updateMask(map[string]bool{}, keyFields, &limitsFlags{})
	require.ErrorIs(t, err, ErrUsage)
}
