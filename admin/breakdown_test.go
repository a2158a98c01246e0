package admin_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// ledgerOf appends n settled requests spread over keys (each of team
// "team-<i%teams>") and two models, every 20 minutes from start.
func ledgerOf(t testing.TB, st store.Store, start time.Time, n, keys, teams int) {
	t.Helper()
	var entries []store.LedgerEntry
	for i := range n {
		end := start.Add(time.Duration(i) * 20 * time.Minute)
		k := i % keys
		entries = append(entries, store.LedgerEntry{
			RequestID: fmt.Sprintf("req-%d", i), KeyID: fmt.Sprintf("key-%03d", k), TeamID: fmt.Sprintf("team-%d", k%teams),
			Model: []string{"gpt-4o", "gpt-4o-mini"}[i%2], Deployment: "d", Usage: kernel.Usage{Input: 100, Output: int64(i%50 + 1)},
			Cost: kernel.Money(i%7+1) * kernel.Cent, Status: kernel.StatusCompleted, HTTPStatus: 200,
			StartedAt: end.Add(-time.Second), EndedAt: end,
		})
	}
	ctx := context.Background()
	require.NoError(t, st.Append(ctx, entries...))
	require.NoError(t, st.Flush(ctx))
}

// TestSpendBreakdown: the breakdown by key, team and model equals the series
// asked one scope (or model) at a time, the largest spender first.
func TestSpendBreakdown(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := e.admin(t)
		c := clients(e)
		day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
		ledgerOf(t, e.st, day.Add(time.Minute), 200, 9, 3)
		since, until := timestamppb.New(day), timestamppb.New(day.Add(72*time.Hour))
		for _, tc := range []struct {
			groupBy string
			scope   func(id string) *adminv1.GetSpendSeriesRequest
			groups  int
		}{
			{"key", func(id string) *adminv1.GetSpendSeriesRequest {
				return &adminv1.GetSpendSeriesRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_KEY, Id: id}}
			}, 9},
			{"team", func(id string) *adminv1.GetSpendSeriesRequest {
				return &adminv1.GetSpendSeriesRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_TEAM, Id: id}}
			}, 3},
			{"model", func(id string) *adminv1.GetSpendSeriesRequest { return &adminv1.GetSpendSeriesRequest{Model: id} }, 2},
		} {
			for _, step := range []time.Duration{time.Hour, 24 * time.Hour} {
				got, err := c.spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: tc.groupBy, Since: since, Until: until, Step: durationpb.New(step)})
				require.NoError(t, err)
				require.Len(t, got.GetGroups(), tc.groups, tc.groupBy)
				for i, g := range got.GetGroups() {
					if i > 0 {
						require.LessOrEqual(t, g.GetTotal().GetNanoUsd(), got.GetGroups()[i-1].GetTotal().GetNanoUsd(), "largest first")
					}
					req := tc.scope(g.GetId())
					req.Since, req.Until, req.Step = since, until, durationpb.New(step)
					want, err := c.spend.GetSpendSeries(ctx, req)
					require.NoError(t, err)
					require.Len(t, g.GetPoints(), len(want.GetPoints()))
					var total int64
					for j, p := range want.GetPoints() {
						require.Equal(t, p.GetStart().AsTime(), g.GetPoints()[j].GetStart().AsTime())
						require.Equal(t, p.GetCost().GetNanoUsd(), g.GetPoints()[j].GetCost().GetNanoUsd(), "%s %s bucket %d", tc.groupBy, g.GetId(), j)
						require.Equal(t, p.GetRequests(), g.GetPoints()[j].GetRequests())
						require.Equal(t, p.GetTokens(), g.GetPoints()[j].GetTokens())
						total += p.GetCost().GetNanoUsd()
					}
					require.Equal(t, total, g.GetTotal().GetNanoUsd())
				}
			}
		}

		// A team admin sees its team's keys and its team only.
		for i := range 3 {
			_, err := c.teams.CreateTeam(ctx, &adminv1.CreateTeamRequest{Team: &adminv1.Team{Id: fmt.Sprintf("team-%d", i)}})
			require.NoError(t, err)
		}
		red := e.credential(t, adminv1.AdminRole_ADMIN_ROLE_TEAM_ADMIN, "team-1")
		for i := range 9 {
			k := fmt.Sprintf("key-%03d", i)
			_, err := c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: k, TeamId: fmt.Sprintf("team-%d", i%3)})
			require.NoError(t, err)
		}
		got, err := c.spend.GetSpendBreakdown(as(t, red), &adminv1.GetSpendBreakdownRequest{GroupBy: "key", Since: since, Until: until})
		require.NoError(t, err)
		var ids []string
		for _, g := range got.GetGroups() {
			ids = append(ids, g.GetId())
		}
		require.ElementsMatch(t, []string{"key-001", "key-004", "key-007"}, ids)
		got, err = c.spend.GetSpendBreakdown(as(t, red), &adminv1.GetSpendBreakdownRequest{GroupBy: "team", Since: since, Until: until})
		require.NoError(t, err)
		require.Len(t, got.GetGroups(), 1)
		require.Equal(t, "team-1", got.GetGroups()[0].GetId())

		_, err = c.spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: "planet"})
		requireCode(t, 3, err) // InvalidArgument
	})
}

// BenchmarkSpendPage is the server side of the console's spend page stacked
// by key over 7 days by day, on SQLite with 200 keys and 20,000 requests:
// per_key asks one series per key after listing the keys (the page before),
// breakdown asks once.
func BenchmarkSpendPage(b *testing.B) {
	st, err := sqlite.Open(context.Background(), b.TempDir()+"/tollgate.db")
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close(context.Background()) })
	e := newEnv(b, st)
	now := e.clock.Now()
	ledgerOf(b, st, now.Add(-7*24*time.Hour), 20_000, 200, 10)
	c := clients(e)
	ctx := as(b, e.adminKey)
	for i := range 200 {
		_, err := c.keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: fmt.Sprintf("key-%03d", i)})
		require.NoError(b, err)
	}
	since := timestamppb.New(now.Add(-7 * 24 * time.Hour).Truncate(24 * time.Hour))
	step := durationpb.New(24 * time.Hour)
	b.Run("per_key", func(b *testing.B) {
		for b.Loop() {
			keys, err := c.keys.ListKeys(ctx, &adminv1.ListKeysRequest{PageSize: 1000})
			require.NoError(b, err)
			for _, k := range keys.GetKeys() {
				_, err := c.spend.GetSpendSeries(ctx, &adminv1.GetSpendSeriesRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_KEY, Id: k.GetId()}, Since: since, Step: step})
				require.NoError(b, err)
			}
		}
	})
	b.Run("breakdown", func(b *testing.B) {
		for b.Loop() {
			_, err := c.spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: "key", Since: since, Step: step})
			require.NoError(b, err)
		}
	})
}
