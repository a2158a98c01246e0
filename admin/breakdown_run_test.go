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

// TestSpendByRun: group_by "run" totals every run (a key's and a team's),
// requests outside a run in none; a team admin sees the runs of its team
// and its keys only.
func TestSpendByRun(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := e.admin(t)
		_, err := store.Put(context.Background(), e.st, "search", &store.Team{ID: "search"}, -1)
		require.NoError(t, err)
		for _, k := range []store.Key{{ID: "k-a", TeamID: "search"}, {ID: "k-b", TeamID: "ads"}} {
			_, err := store.Put(context.Background(), e.st, k.ID, &k, -1)
			require.NoError(t, err)
		}
		day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
		var entries []store.LedgerEntry
		for i, r := range []struct{ key, team, run string }{
			{"k-a", "search", "key:k-a/loop-1"},
			{"k-a", "search", "key:k-a/loop-1"},
			{"k-a", "search", "team:search/nightly"},
			{"k-b", "ads", "key:k-b/loop-9"},
			{"k-a", "search", ""},
		} {
			entries = append(entries, store.LedgerEntry{
				RequestID: "r" + string(rune('0'+i)), KeyID: r.key, TeamID: r.team, RunID: r.run, Model: "m", Deployment: "d",
				Cost: kernel.Money(i+1) * kernel.Cent, Status: kernel.StatusCompleted, HTTPStatus: 200,
				StartedAt: day.Add(time.Hour), EndedAt: day.Add(time.Hour),
			})
		}
		require.NoError(t, e.st.Append(context.Background(), entries...))
		require.NoError(t, e.st.Flush(context.Background()))
		spend := adminv1.NewSpendServiceClient(e.conn)
		req := &adminv1.GetSpendBreakdownRequest{GroupBy: "run", Since: timestamppb.New(day), Until: timestamppb.New(day.Add(24 * time.Hour))}
		totals := func(ctx context.Context) map[string]int64 {
			resp, err := spend.GetSpendBreakdown(ctx, req)
			require.NoError(t, err)
			out := map[string]int64{}
			for _, g := range resp.GetGroups() {
				out[g.GetId()] = g.GetTotal().GetNanoUsd()
			}
			return out
		}
		c := int64(kernel.Cent)
		require.Equal(t, map[string]int64{"key:k-a/loop-1": 3 * c, "team:search/nightly": 3 * c, "key:k-b/loop-9": 4 * c}, totals(ctx))
		search := as(t, e.credential(t, adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN, "search"))
		require.Equal(t, map[string]int64{"key:k-a/loop-1": 3 * c, "team:search/nightly": 3 * c}, totals(search))
	})
}
