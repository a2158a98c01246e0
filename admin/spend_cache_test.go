package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// TestSpendCache: the spend reports show the cache's hits, misses and
// savings per key, team and model — totals, series, breakdowns and rows.
func TestSpendCache(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := e.admin(t)
		c := clients(e)
		at := time.Date(2026, 3, 10, 9, 30, 0, 0, time.UTC)
		row := func(id, key, team, model string, r store.CacheResult, cost, saved kernel.Money) store.LedgerEntry {
			return store.LedgerEntry{
				RequestID: id, KeyID: key, TeamID: team, Model: model, Cost: cost, Cache: r, CacheSaved: saved,
				Status: kernel.StatusCompleted, HTTPStatus: 200, StartedAt: at, EndedAt: at,
			}
		}
		rows := []store.LedgerEntry{
			row("r1", "k1", "t1", "gpt", store.CacheMiss, 700, 0),
			row("r2", "k1", "t1", "gpt", store.CacheHit, 0, 700),
			row("r3", "k1", "t1", "gpt", store.CacheSemanticHit, 0, 300),
			row("r4", "k2", "t2", "gpt", store.CacheHit, 0, 700),
			row("r5", "k2", "t2", "claude", store.CacheMiss, 500, 0),
			row("r6", "k2", "t2", "claude", store.CacheNone, 100, 0),
		}
		require.NoError(t, e.st.Append(context.Background(), rows...))
		require.NoError(t, e.st.Flush(context.Background()))
		since, until := timestamppb.New(at.Truncate(24*time.Hour)), timestamppb.New(at.Truncate(24*time.Hour).Add(24*time.Hour))
		counts := func(hits, misses, saved int64) *adminv1.CacheCounts {
			return &adminv1.CacheCounts{Hits: hits, Misses: misses, Saved: &adminv1.Money{NanoUsd: saved}}
		}
		equal := func(want, got *adminv1.CacheCounts, msg string) {
			t.Helper()
			require.Equal(t, want.GetHits(), got.GetHits(), msg)
			require.Equal(t, want.GetMisses(), got.GetMisses(), msg)
			require.Equal(t, want.GetSaved().GetNanoUsd(), got.GetSaved().GetNanoUsd(), msg)
		}

		key1 := &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_KEY, Id: "k1"}
		got, err := c.spend.GetSpend(ctx, &adminv1.GetSpendRequest{Scope: key1, Since: since, Until: until})
		require.NoError(t, err)
		equal(counts(2, 1, 1000), got.GetCache(), "key k1")
		got, err = c.spend.GetSpend(ctx, &adminv1.GetSpendRequest{Model: "gpt", Since: since, Until: until})
		require.NoError(t, err)
		equal(counts(3, 1, 1700), got.GetCache(), "model gpt")
		series, err := c.spend.GetSpendSeries(ctx, &adminv1.GetSpendSeriesRequest{Scope: key1, Since: since, Until: until})
		require.NoError(t, err)
		require.Len(t, series.GetPoints(), 1)
		equal(counts(2, 1, 1000), series.GetPoints()[0].GetCache(), "series of k1")

		for _, tc := range []struct {
			by   string
			want map[string]*adminv1.CacheCounts
		}{
			{"key", map[string]*adminv1.CacheCounts{"k1": counts(2, 1, 1000), "k2": counts(1, 1, 700)}},
			{"team", map[string]*adminv1.CacheCounts{"t1": counts(2, 1, 1000), "t2": counts(1, 1, 700)}},
			{"model", map[string]*adminv1.CacheCounts{"gpt": counts(3, 1, 1700), "claude": counts(0, 1, 0)}},
		} {
			b, err := c.spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: tc.by, Since: since, Until: until})
			require.NoError(t, err)
			require.Len(t, b.GetGroups(), len(tc.want), tc.by)
			for _, g := range b.GetGroups() {
				equal(tc.want[g.GetId()], g.GetCache(), tc.by+" "+g.GetId())
				equal(tc.want[g.GetId()], g.GetPoints()[0].GetCache(), tc.by+" "+g.GetId()+" bucket")
			}
		}

		list, err := c.spend.ListSpendEntries(ctx, &adminv1.ListSpendEntriesRequest{Scope: key1, Since: since, Until: until})
		require.NoError(t, err)
		require.Len(t, list.GetEntries(), 3)
		byID := map[string]*adminv1.SpendEntry{}
		for _, en := range list.GetEntries() {
			byID[en.GetRequestId()] = en
		}
		require.Equal(t, "miss", byID["r1"].GetCache())
		require.Nil(t, byID["r1"].GetCacheSaved())
		require.Equal(t, "hit", byID["r2"].GetCache())
		require.Equal(t, int64(700), byID["r2"].GetCacheSaved().GetNanoUsd())
		require.Equal(t, "semantic_hit", byID["r3"].GetCache())
	})
}
