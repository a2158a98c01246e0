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

func TestSpendBreakdownByMCPServerAndTool(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := e.admin(t)
		c := clients(e)
		day := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
		at := day.Add(time.Hour)
		rows := []store.LedgerEntry{
			{RequestID: "m1", KeyID: "k", Model: "mcp:github/search", Deployment: "mcp:github", Cost: kernel.Cent, StartedAt: at, EndedAt: at},
			{RequestID: "m2", KeyID: "k", Model: "mcp:github/search", Deployment: "mcp:github", Cost: kernel.Cent, StartedAt: at, EndedAt: at},
			{RequestID: "m3", KeyID: "k", Model: "mcp:github/create_issue", Deployment: "mcp:github", Cost: 5 * kernel.Cent, StartedAt: at, EndedAt: at},
			{RequestID: "m4", KeyID: "k", Model: "mcp:fs/read_file", Deployment: "mcp:fs", StartedAt: at, EndedAt: at},
			{RequestID: "r1", KeyID: "k", Model: "gpt-4o", Deployment: "openai", Cost: kernel.Dollar, StartedAt: at, EndedAt: at},
		}
		require.NoError(t, e.st.Append(context.Background(), rows...))
		require.NoError(t, e.st.Flush(context.Background()))
		since, until := timestamppb.New(day), timestamppb.New(day.Add(24*time.Hour))
		totals := func(by string) map[string]int64 {
			got, err := c.spend.GetSpendBreakdown(ctx, &adminv1.GetSpendBreakdownRequest{GroupBy: by, Since: since, Until: until})
			require.NoError(t, err)
			out := map[string]int64{}
			for _, g := range got.GetGroups() {
				out[g.GetId()] = g.GetTotal().GetNanoUsd()
			}
			return out
		}
		require.Equal(t, map[string]int64{"github": int64(7 * kernel.Cent), "fs": 0}, totals("mcp_server"))
		require.Equal(t, map[string]int64{"github/search": int64(2 * kernel.Cent), "github/create_issue": int64(5 * kernel.Cent), "fs/read_file": 0}, totals("mcp_tool"))
	})
}
