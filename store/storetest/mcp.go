package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// mcpTests: MCP servers and grants round trip, and tool-call ledger rows are
// charged and listed like any other.
func (s *suite) mcpTests() []test {
	return []test{
		{"ServerRoundTrip", func(t *testing.T) {
			st := s.fresh(t)
			m := store.MCPServer{
				ID: "github", URL: "https://mcp.example/mcp", Credential: []byte{1, 2, 3}, CredentialHeader: "X-Token",
				Headers: map[string]string{"X-Org": "acme"}, PricePerCall: kernel.Cent,
				ToolPrices: map[string]kernel.Money{"search": 0, "create_issue": 5 * kernel.Cent}, RPM: 60,
			}
			_, err := store.Put(t.Context(), st, m.ID, &m, 0)
			require.NoError(t, err)
			got, _, err := store.Get[store.MCPServer](t.Context(), st, "github")
			require.NoError(t, err)
			require.Equal(t, m, got)
			all, err := store.List[store.MCPServer](t.Context(), st)
			require.NoError(t, err)
			require.Equal(t, []store.MCPServer{m}, all)
			require.NoError(t, st.Delete(t.Context(), store.KindMCPServer, "github"))
			_, _, err = store.Get[store.MCPServer](t.Context(), st, "github")
			require.ErrorIs(t, err, store.ErrNotFound)
		}},
		{"GrantsRoundTrip", func(t *testing.T) {
			st := s.fresh(t)
			k := store.Key{ID: "k", Prefix: "tg-x", MCPTools: []string{"github/*", "fs/read_*"}}
			tm := store.Team{ID: "eng", MCPTools: []string{"github/search_*"}}
			_, err := store.Put(t.Context(), st, k.ID, &k, 0)
			require.NoError(t, err)
			_, err = store.Put(t.Context(), st, tm.ID, &tm, 0)
			require.NoError(t, err)
			gotK, _, err := store.Get[store.Key](t.Context(), st, "k")
			require.NoError(t, err)
			require.Equal(t, k.MCPTools, gotK.MCPTools)
			gotT, _, err := store.Get[store.Team](t.Context(), st, "eng")
			require.NoError(t, err)
			require.Equal(t, tm.MCPTools, gotT.MCPTools)
		}},
		{"ToolCallRows", func(t *testing.T) {
			st := s.fresh(t)
			at := time.Now().UTC().Truncate(time.Second)
			e := store.LedgerEntry{
				RequestID: "mcp-1", KeyID: "k", TeamID: "eng", Model: "mcp:github/search", Deployment: "mcp:github",
				Usage: kernel.Usage{Input: 1}, Cost: kernel.Cent, HTTPStatus: 200, StartedAt: at.Add(-time.Second), EndedAt: at,
			}
			require.NoError(t, st.Append(t.Context(), e))
			require.NoError(t, st.Flush(t.Context()))
			rows, err := st.Entries(t.Context(), store.LedgerFilter{Model: "mcp:github/search"})
			require.NoError(t, err)
			require.Len(t, rows, 1)
			server, tool, ok := rows[0].MCPCall()
			require.True(t, ok)
			require.Equal(t, "github", server)
			require.Equal(t, "search", tool)
			spent, err := st.ScopeSpend(t.Context(), kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "eng"}, at.Add(-time.Hour), time.Time{})
			require.NoError(t, err)
			require.Equal(t, kernel.Cent, spent)
		}},
	}
}
