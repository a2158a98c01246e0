package mcp_test

import (
	"context"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/guard"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
)

// toolGuard runs real guardrails (guard/) for every caller, as the gateway's
// adapter does for the caller's attached ones.
type toolGuard struct{ set guard.Set }

func (g toolGuard) CheckTool(ctx context.Context, _ *mcp.Caller, st mcp.ToolStage, doc []byte) mcp.ToolVerdict {
	stage := guard.Pre
	if st == mcp.ToolResult {
		stage = guard.Post
	}
	v := g.set.Check(ctx, stage, doc, true)
	out := mcp.ToolVerdict{Applied: v.Applied, Blocked: v.Blocked, Doc: v.Text}
	if h, ok := v.Block(); ok {
		out.Message, out.Guardrail = h.Message(), h.Guardrail
	}
	return out
}

func compile(t *testing.T, sp guard.Spec) *guard.Guardrail {
	t.Helper()
	g, err := guard.Compile(sp)
	require.NoError(t, err)
	return g
}

// Guardrails on tools/call, against a real SDK upstream: arguments are
// redacted before the upstream sees them (its echo shows what it got) or
// the call is refused before admission (no upstream call, no ledger row);
// results are redacted before the client sees them or replaced by the
// error (the call ran and was charged).
func TestToolCallGuardrails(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			f := newFixture(t, v == "2026-07-28")
			g := toolGuard{guard.Set{
				compile(t, guard.Spec{Name: "emails", Kind: guard.KindPII, Action: "redact", On: []string{"pre"}, Types: []string{"EMAIL"}}),
				compile(t, guard.Spec{Name: "phones-out", Kind: guard.KindPII, Action: "redact", On: []string{"post"}, Types: []string{"PHONE"}}),
				compile(t, guard.Spec{Name: "no-secrets", Kind: guard.KindWords, Action: "block", On: []string{"pre"}, Words: []string{"forbidden"}}),
				compile(t, guard.Spec{Name: "no-leaks", Kind: guard.KindWords, Action: "block", On: []string{"post"}, Words: []string{"classified"}}),
			}}
			h := mcp.New(f.cat, f.acct, f.sealer, mcp.WithGuard(g))
			t.Cleanup(h.Close)
			s := httptest.NewServer(h)
			t.Cleanup(s.Close)
			f.gateways = []*httptest.Server{s}
			cs, _ := connect(t, f, keyRead, "/mcp", v, false)
			call := func(text string) (*sdk.CallToolResult, error) {
				return cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__echo", Arguments: map[string]any{"text": text}})
			}

			// Arguments redacted: the upstream echoes the placeholder.
			r, err := call("write to jane.doe@example.com")
			require.NoError(t, err)
			require.Equal(t, "write to [EMAIL]", text(t, r))

			// Result redacted: the upstream got the number, the client
			// does not.
			r, err = call("call +44 20 7946 0958")
			require.NoError(t, err)
			require.Equal(t, "call [PHONE]", text(t, r))
			require.Equal(t, int64(2), f.gh.calls.Load())
			require.Len(t, f.acct.ledger, 2)

			// Arguments blocked: no upstream call, nothing admitted.
			_, err = call("the forbidden plan")
			require.Equal(t, int64(mcp.CodeGuardrailBlocked), rpcCode(t, err))
			require.ErrorContains(t, err, `Blocked by guardrail "no-secrets": the text contains BLOCKED_WORD.`)
			require.NotContains(t, err.Error(), "forbidden plan")
			require.Equal(t, int64(2), f.gh.calls.Load(), "the upstream never saw the call")
			require.Len(t, f.acct.ledger, 2, "nothing admitted or charged")
			require.Len(t, f.acct.refused, 1, "a $0 refused row, as for a model request")
			ref := f.acct.refused[0]
			require.Equal(t, kernel.StatusRefused, ref.Status)
			require.Equal(t, "no-secrets", ref.Guardrail)
			require.False(t, ref.Admitted)
			require.False(t, ref.Ran)
			require.Equal(t, "github", ref.Server)
			require.Equal(t, "echo", ref.Tool)
			require.NotEmpty(t, ref.RequestID)

			// Result blocked: the call ran (and is charged), the client gets
			// the error instead of the result.
			_, err = call("classified")
			require.Equal(t, int64(mcp.CodeGuardrailBlocked), rpcCode(t, err))
			require.ErrorContains(t, err, `guardrail "no-leaks"`)
			require.Equal(t, int64(3), f.gh.calls.Load())
			require.Len(t, f.acct.ledger, 3)
			require.True(t, f.acct.ledger[2].Ran)
			require.Len(t, f.acct.refused, 1, "a result blocked after the call ran is charged, not refused")
		})
	}
}
