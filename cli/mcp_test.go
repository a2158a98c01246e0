package cli_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

func TestMCPCommands(t *testing.T) {
	t.Setenv("TEST_MCP_TOKEN", "ghp-secret-token")
	s := startServer(t, memstore.New())
	runSteps(t, s, []step{
		{
			args: []string{
				"mcp-server", "create", "github", "--url", "https://mcp.example.com/mcp", "--credential-env", "TEST_MCP_TOKEN",
				"--header", "X-Org=acme", "--price-per-call", "0.002", "--tool-price", "create_issue=0.05", "--tool-price", "search=0", "--rpm", "60",
			},
			want: []string{"github", "https://mcp.example.com/mcp", "set (write-only)", "X-Org=acme", "$0.002", "create_issue=$0.05", "60"},
		},
		{args: []string{"mcp-server", "list"}, want: []string{"github", "$0.002"}},
		{args: []string{"mcp-server", "get", "github"}, want: []string{"search=$0"}},
		{args: []string{"mcp-server", "update", "github", "--rpm", "120"}, want: []string{"120", "set (write-only)"}},
		{args: []string{"mcp-server", "create", "bad_id", "--url", "https://x/mcp"}, wantErr: "only letters, digits and '-'"},
		{args: []string{"mcp-server", "create", "x", "--url", "ftp://x"}, wantErr: "not an http(s) URL"},
		{args: []string{"mcp-server", "create", "y"}, wantErr: "--url is required"},
		{args: []string{"team", "create", "eng", "--mcp-tools", "github/search_*"}, want: []string{"eng"}},
		{args: []string{"key", "create", "--id", "k1", "--team", "eng", "--mcp-tools", "github/*,fs/read_*"}, want: []string{"tg-"}},
		{args: []string{"mcp-tools", "get", "key", "k1"}, want: []string{"github/*,fs/read_*"}},
		{args: []string{"mcp-tools", "get", "team", "eng"}, want: []string{"github/search_*"}},
		{args: []string{"mcp-tools", "set", "key", "k1", "github/*"}, want: []string{"key k1 may call MCP tools: github/*"}},
		{args: []string{"mcp-tools", "set", "key", "k1", "github"}, wantErr: "want SERVER/TOOL"},
		{args: []string{"mcp-tools", "set", "robot", "k1", "github/*"}, wantErr: "key, user, team or org"},
		{args: []string{"mcp-tools", "set", "key", "nope", "github/*"}, wantErr: "not found"},
		// --mcp-tools on update (alone, or with other changes) and on user
		// and org create, as on key and team create.
		{args: []string{"key", "update", "k1", "--mcp-tools", "fs/*"}, want: []string{"k1"}},
		{args: []string{"mcp-tools", "get", "key", "k1"}, want: []string{"fs/*"}},
		{args: []string{"key", "update", "k1", "--alias", "bot"}, want: []string{"bot"}},
		{args: []string{"mcp-tools", "get", "key", "k1"}, want: []string{"fs/*"}},
		{args: []string{"team", "update", "eng", "--name", "Engineering", "--mcp-tools", "github/*,fs/prompt:*"}, want: []string{"Engineering"}},
		{args: []string{"mcp-tools", "get", "team", "eng"}, want: []string{"github/*,fs/prompt:*"}},
		{args: []string{"team", "update", "eng", "--mcp-tools", "github/resource:x"}, wantErr: "granted as a whole"},
		{args: []string{"team", "update", "eng"}, wantErr: "nothing to change"},
		{args: []string{"user", "create", "u1", "--mcp-tools", "github/get_*"}, want: []string{"u1"}},
		{args: []string{"mcp-tools", "get", "user", "u1"}, want: []string{"github/get_*"}},
		{args: []string{"user", "update", "u1", "--mcp-tools", ""}, want: []string{"u1"}},
		{args: []string{"org", "create", "acme", "--mcp-tools", "*/*"}, want: []string{"acme"}},
		{args: []string{"org", "update", "acme", "--mcp-tools", "github/*"}, want: []string{"acme"}},
		{args: []string{"mcp-tools", "get", "org", "acme"}, want: []string{"github/*"}},
	})
	k, _, err := store.Get[store.Key](context.Background(), s.st, "k1")
	require.NoError(t, err)
	require.Equal(t, []string{"fs/*"}, k.MCPTools)
	u, _, err := store.Get[store.User](context.Background(), s.st, "u1")
	require.NoError(t, err)
	require.Empty(t, u.MCPTools, "--mcp-tools '' removes the grants")
	m, _, err := store.Get[store.MCPServer](context.Background(), s.st, "github")
	require.NoError(t, err)
	require.NotContains(t, string(m.Credential), "ghp-secret-token", "sealed at rest")
	plain, err := s.sealer.Open(m.Credential)
	require.NoError(t, err)
	require.Equal(t, "ghp-secret-token", string(plain))
	require.Equal(t, 5*kernel.Cent, m.ToolPrices["create_issue"])
	require.Equal(t, int64(120), m.RPM)

	out, err := s.run(t, "audit", "list")
	require.NoError(t, err)
	require.Contains(t, out, "mcp_server.create")
	require.NotContains(t, out, "ghp-secret-token")
	out, err = s.run(t, "mcp-server", "get", "github", "-o", "json")
	require.NoError(t, err)
	require.NotContains(t, out, "ghp-secret-token")

	runSteps(t, s, []step{
		{args: []string{"mcp-server", "delete", "github"}, want: []string{"github"}},
		{args: []string{"mcp-server", "get", "github"}, wantErr: "not found"},
	})
}
