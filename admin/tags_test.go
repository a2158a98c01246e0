package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// TestTags: a key's default tags, tag budgets over gRPC and REST, and spend
// grouped by tag (every tag, or the values of one).
func TestTags(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := e.admin(t)
		keys := adminv1.NewKeyServiceClient(e.conn)
		created, err := keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k-search", Tags: map[string]string{"team": "search", "env": "prod"}})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"team": "search", "env": "prod"}, created.GetKey().GetTags())
		_, err = keys.CreateKey(ctx, &adminv1.CreateKeyRequest{Id: "k-bad", Tags: map[string]string{"bad name": "x"}})
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		upd, err := keys.UpdateKey(ctx, &adminv1.UpdateKeyRequest{Id: "k-search", Tags: map[string]string{"env": "dev"}, UpdateMask: mask("tags")})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"env": "dev"}, upd.GetKey().GetTags())
		k, _, err := store.Get[store.Key](ctx, e.st, "k-search")
		require.NoError(t, err)
		require.Equal(t, map[string]string{"env": "dev"}, k.Tags)

		for name, tags := range map[string]adminv1.TagServiceClient{"grpc": adminv1.NewTagServiceClient(e.conn), "rest": adminv1.NewTagServiceClient(e.resource(t))} {
			t.Run(name, func(t *testing.T) {
				set, err := tags.SetTagBudget(ctx, &adminv1.SetTagBudgetRequest{TagBudget: &adminv1.TagBudget{
					Tag: "feature=search", Limits: &adminv1.Limits{Budgets: []*adminv1.BudgetWindow{{Limit: &adminv1.Money{NanoUsd: 10 * int64(kernel.Dollar)}, Period: adminv1.PeriodKind_PERIOD_KIND_MONTHLY}}},
				}})
				require.NoError(t, err)
				require.Equal(t, "feature=search", set.GetTagBudget().GetTag())
				list, err := tags.ListTagBudgets(ctx, &adminv1.ListTagBudgetsRequest{})
				require.NoError(t, err)
				require.Len(t, list.GetTagBudgets(), 1)
				require.Equal(t, int64(10*kernel.Dollar), list.GetTagBudgets()[0].GetLimits().GetBudgets()[0].GetLimit().GetNanoUsd())
				tb, _, err := store.Get[store.TagBudget](ctx, e.st, "feature=search")
				require.NoError(t, err)
				require.Equal(t, 10*kernel.Dollar, tb.Limits.Budgets[0].Limit)
				for _, bad := range []string{"feature", "feature=a b", "na me=x"} {
					_, err = tags.SetTagBudget(ctx, &adminv1.SetTagBudgetRequest{TagBudget: &adminv1.TagBudget{Tag: bad}})
					require.Equal(t, codes.InvalidArgument, status.Code(err), bad)
				}
				_, err = tags.DeleteTagBudget(ctx, &adminv1.DeleteTagBudgetRequest{Tag: "feature=search"})
				require.NoError(t, err)
				_, err = tags.DeleteTagBudget(ctx, &adminv1.DeleteTagBudgetRequest{Tag: "feature=search"})
				require.Equal(t, codes.NotFound, status.Code(err))
			})
		}

		// Spend by tag.
		day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
		var entries []store.LedgerEntry
		for i, tags := range [][]string{{"env=prod", "feature=search"}, {"feature=search"}, {"env=prod", "feature=chat"}, nil} {
			entries = append(entries, store.LedgerEntry{
				RequestID: "r" + string(rune('0'+i)), KeyID: "k-search", Model: "m", Deployment: "d", Tags: tags,
				Cost: kernel.Money(i+1) * kernel.Cent, Status: kernel.StatusCompleted, HTTPStatus: 200,
				StartedAt: day.Add(time.Hour), EndedAt: day.Add(time.Hour),
			})
		}
		require.NoError(t, e.st.Append(context.Background(), entries...))
		require.NoError(t, e.st.Flush(context.Background()))
		spend := adminv1.NewSpendServiceClient(e.conn)
		since, until := timestamppb.New(day), timestamppb.New(day.Add(24*time.Hour))
		totals := func(groupBy string) map[string]int64 {
			resp, err := spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: groupBy, Since: since, Until: until})
			require.NoError(t, err)
			out := map[string]int64{}
			for _, g := range resp.GetGroups() {
				out[g.GetId()] = g.GetTotal().GetNanoUsd()
			}
			return out
		}
		c := int64(kernel.Cent)
		require.Equal(t, map[string]int64{"search": 3 * c, "chat": 3 * c}, totals("tag:feature"))
		require.Equal(t, map[string]int64{"prod": 4 * c}, totals("tag:env"))
		require.Equal(t, map[string]int64{"feature=search": 3 * c, "feature=chat": 3 * c, "env=prod": 4 * c}, totals("tag"))
		_, err = spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: "tag:a=b"})
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		total, err := spend.GetSpend(ctx, &adminv1.GetSpendRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_TAG, Id: "feature=search"}, Since: since, Until: until})
		require.NoError(t, err)
		require.Equal(t, 3*c, total.GetTotal().GetNanoUsd())
		logs, err := spend.ListSpendEntries(ctx, &adminv1.ListSpendEntriesRequest{Scope: &adminv1.Scope{Kind: adminv1.ScopeKind_SCOPE_KIND_TAG, Id: "env=prod"}, Since: since, Until: until})
		require.NoError(t, err)
		require.Len(t, logs.GetEntries(), 2)
	})
}
