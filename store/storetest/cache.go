package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// cacheTests: a row's cache result and savings round-trip, and the hourly
// totals count hits (exact and semantic), misses and savings per scope, once
// per request id (issue 33).
func (s *suite) cacheTests() []test {
	at := base.Add(30 * time.Minute)
	row := func(id, key, team string, c store.CacheResult, cost, saved kernel.Money) store.LedgerEntry {
		return store.LedgerEntry{
			RequestID: id, KeyID: key, TeamID: team, Model: "gpt", Cost: cost, Cache: c, CacheSaved: saved,
			Status: kernel.StatusCompleted, HTTPStatus: 200, StartedAt: at, EndedAt: at,
		}
	}
	rows := []store.LedgerEntry{
		row("c1-hit", "k1", "t1", store.CacheHit, 0, 700),
		row("c2-sem", "k1", "t1", store.CacheSemanticHit, 5, 300),
		row("c3-miss", "k1", "t1", store.CacheMiss, 700, 0),
		row("c4-skip", "k1", "t1", store.CacheSkip, 90, 0),
		row("c5-none", "k2", "t1", store.CacheNone, 40, 0),
		row("c6-hit", "k2", "", store.CacheHit, 0, 1000),
	}
	return []test{
		{"RoundTrip", func(t *testing.T) {
			st := s.fresh(t)
			require.NoError(t, st.Append(t.Context(), rows...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			got, err := st.Entries(t.Context(), store.LedgerFilter{Model: "gpt"})
			require.NoError(t, err)
			require.Len(t, got, len(rows))
			for i := range rows {
				require.Equal(t, rows[i].RequestID, got[i].RequestID)
				require.Equal(t, rows[i].Cache, got[i].Cache, rows[i].RequestID)
				require.Equal(t, rows[i].CacheSaved, got[i].CacheSaved, rows[i].RequestID)
			}
		}},
		{"Totals", func(t *testing.T) {
			st := s.fresh(t)
			require.NoError(t, st.Append(t.Context(), rows...))
			require.NoError(t, st.Append(t.Context(), rows[0], rows[2])) // repeats count once
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			since, until := base, base.Add(2*time.Hour)
			series := func(ref kernel.ScopeRef) store.CacheCounts {
				points, err := st.Series(t.Context(), ref, since, until, time.Hour)
				require.NoError(t, err)
				require.Len(t, points, 2)
				require.Zero(t, points[1].Cache, "the second hour has nothing")
				return points[0].Cache
			}
			require.Equal(t, store.CacheCounts{Hits: 2, Misses: 1, Saved: 1000}, series(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}))
			require.Equal(t, store.CacheCounts{Hits: 1, Saved: 1000}, series(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k2"}))
			require.Equal(t, store.CacheCounts{Hits: 2, Misses: 1, Saved: 1000}, series(kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t1"}))
			require.Equal(t, store.CacheCounts{Hits: 3, Misses: 1, Saved: 2000}, series(kernel.ScopeRef{Kind: kernel.ScopeGlobal}))
			by, ok := st.(store.SpendByScope)
			require.True(t, ok, "%T does not implement store.SpendByScope", st)
			keys, err := by.SeriesByScope(t.Context(), kernel.ScopeKey, since, until, 2*time.Hour)
			require.NoError(t, err)
			require.Equal(t, store.CacheCounts{Hits: 2, Misses: 1, Saved: 1000}, keys["k1"][0].Cache)
			require.Equal(t, store.CacheCounts{Hits: 1, Saved: 1000}, keys["k2"][0].Cache)
			// The spend itself is what the rows cost, hits included.
			spent, err := st.ScopeSpend(t.Context(), kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, since, until)
			require.NoError(t, err)
			require.Equal(t, kernel.Money(795), spent)
		}},
	}
}
