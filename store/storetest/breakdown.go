package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// spendByScopeTests: SeriesByScope of a kind equals Series of each scope of
// that kind that spent in the range, and names no other scope. Every backend
// must implement store.SpendByScope.
func (s *suite) spendByScopeTests() []test {
	return []test{
		{"EqualsSeriesPerScope", func(t *testing.T) {
			st := s.fresh(t)
			by, ok := st.(store.SpendByScope)
			require.True(t, ok, "%T does not implement store.SpendByScope", st)
			entries := Gen(600, 17, "bs")
			require.NoError(t, st.Append(t.Context(), entries...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			hour := func(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) }
			for _, w := range []struct {
				since, until time.Time
				step         time.Duration
			}{
				{hour(0), hour(hours), time.Hour},
				{hour(1), hour(hours + 2), 3 * time.Hour},
				{hour(-4), hour(-1), time.Hour}, // before everything
			} {
				for _, kind := range []kernel.ScopeKind{kernel.ScopeOrg, kernel.ScopeTeam, kernel.ScopeUser, kernel.ScopeCustomer, kernel.ScopeKey, kernel.ScopeTag} {
					got, err := by.SeriesByScope(t.Context(), kind, w.since, w.until, w.step)
					require.NoError(t, err)
					spent := 0
					for _, scope := range allScopes(entries) {
						if scope.Kind != kind {
							continue
						}
						want, err := st.Series(t.Context(), scope, w.since, w.until, w.step)
						require.NoError(t, err)
						var reqs int64
						for _, p := range want {
							reqs += p.Requests
						}
						if reqs == 0 {
							require.NotContains(t, got, scope.ID)
							continue
						}
						spent++
						require.Equal(t, want, got[scope.ID], "kind %v scope %s window %v", kind, scope.ID, w)
					}
					require.Len(t, got, spent, "kind %v: no other scope", kind)
				}
			}
		}},
	}
}
