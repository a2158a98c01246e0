package admin

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// The MCP groupings of GetSpendBreakdown: tool calls only (the ledger's MCP
// rows, store/mcp.go), by server ("github") or by tool ("github/search").
const (
	groupMCPServer = "mcp_server"
	groupMCPTool   = "mcp_tool"
)

func (s *Server) mcpSeries(ctx context.Context, by string, since, until time.Time, step time.Duration, n int) (map[string][]store.SpendPoint, error) {
	f := store.LedgerFilter{Since: since, Until: until}
	if g := teamGuard(ctx); g != "" {
		f.Scope = &kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: g}
	}
	groups, err := s.bucketEntries(ctx, f, since, step, n, func(e *store.LedgerEntry) string {
		server, tool, ok := e.MCPCall()
		switch {
		case !ok:
			return ""
		case by == groupMCPServer:
			return server
		default:
			return server + "/" + tool
		}
	})
	delete(groups, "") // model requests
	return groups, err
}
