package admin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/admin"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

const mcpDoc = `
mcp_servers:
  - id: github
    url: https://api.githubcopilot.com/mcp/
    credential: ${GITHUB_MCP_TOKEN}
    price_per_call: "0.001"
    tool_prices: {create_issue: "0.01"}
    rpm: 600
teams:
  - id: platform
    mcp_tools: [github/search_*, github/get_*]
keys:
  - id: agent
    team: platform
    secret: ` + ciKey + `
    mcp_tools: ["github/*"]
`

func TestApplyMCP(t *testing.T) {
	t.Setenv("GITHUB_MCP_TOKEN", "ghp-x")
	st := memstore.New()
	sealer := testSealer(t)
	ctx := context.Background()
	res, err := admin.Apply(ctx, st, sealer, []byte(mcpDoc), "ops")
	require.NoError(t, err)
	require.Contains(t, res.Created, "mcp_server/github")
	m, _, err := store.Get[store.MCPServer](ctx, st, "github")
	require.NoError(t, err)
	require.Equal(t, kernel.MicroUSD*1000, m.PricePerCall)
	require.Equal(t, kernel.Cent, m.ToolPrices["create_issue"])
	plain, err := sealer.Open(m.Credential)
	require.NoError(t, err)
	require.Equal(t, "ghp-x", string(plain))
	k, _, err := store.Get[store.Key](ctx, st, "agent")
	require.NoError(t, err)
	require.Equal(t, []string{"github/*"}, k.MCPTools)
	tm, _, err := store.Get[store.Team](ctx, st, "platform")
	require.NoError(t, err)
	require.Equal(t, []string{"github/search_*", "github/get_*"}, tm.MCPTools)

	res, err = admin.Apply(ctx, st, sealer, []byte(mcpDoc), "ops")
	require.NoError(t, err)
	require.Empty(t, res.Created)
	require.Empty(t, res.Updated, "idempotent")

	_, err = admin.Apply(ctx, st, sealer, []byte("keys:\n  - id: x\n    mcp_tools: [github]\n"), "ops")
	require.ErrorContains(t, err, "keys[0].mcp_tools")
	_, err = admin.Apply(ctx, st, sealer, []byte("mcp_servers:\n  - id: a_b\n    url: https://x/\n"), "ops")
	require.ErrorContains(t, err, "mcp_servers[0]")
}
