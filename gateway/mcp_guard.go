package gateway

import (
	"context"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/guard"
	"github.com/tollgate-ai/tollgate/mcp"
)

// mcpGuard runs the guardrails attached to a tool caller's key, team and
// org (no model: a tool call has none) on tools/call arguments (their pre
// stage) and results (post), as mcp.ToolGuard.
type mcpGuard struct{ cat *Catalog }

var _ mcp.ToolGuard = mcpGuard{}

func (g mcpGuard) CheckTool(ctx context.Context, c *mcp.Caller, st mcp.ToolStage, doc []byte) mcp.ToolVerdict {
	gs, _ := g.cat.Guardrails(&extproc.Principal{KeyID: c.KeyID, UserID: c.UserID, TeamID: c.TeamID, OrgID: c.OrgID}, "").(*guardSet)
	if gs == nil {
		return mcp.ToolVerdict{}
	}
	stage := guard.Pre
	if st == mcp.ToolResult {
		stage = guard.Post
	}
	v := gs.set.Check(ctx, stage, doc, true)
	out := mcp.ToolVerdict{Applied: v.Applied, Blocked: v.Blocked, Doc: v.Text}
	if h, ok := v.Block(); ok {
		out.Message, out.Guardrail = h.Message(), h.Guardrail
	}
	return out
}
