package mcp_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// A 2026-07-28 client's requests carry its protocol version, info and
// capabilities in _meta (io.modelcontextprotocol/*); the gateway speaks to
// each upstream in the version it negotiated with it, so those keys must
// not reach the upstream: a stateful 2025-11-25 SDK server refuses any
// request whose _meta names 2026-07-28 ("protocol version ... is not
// supported by this server"). fs is that server here. The client's other
// _meta keys go on.
func TestReservedMetaNotForwarded(t *testing.T) {
	f := newFixture(t, true) // github stateless (2026-07-28), fs with sessions (2025-11-25)
	ctx := t.Context()
	cs, _ := connect(t, f, keyAll, "/mcp", "2026-07-28", false)
	sent := func(u *upstream) string { s, _ := u.body.Load().(string); return s }

	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{
		Meta: sdk.Meta{"example.com/trace": "t1"}, URI: "tollgate://fs/file:///readme",
	})
	require.NoError(t, err)
	require.Len(t, rr.Contents, 1)
	require.Equal(t, "contents of file:///readme", rr.Contents[0].Text)
	require.Contains(t, sent(f.fs), `"example.com/trace":"t1"`, "other _meta keys are kept")
	require.NotContains(t, sent(f.fs), "io.modelcontextprotocol/")

	gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{
		Meta: sdk.Meta{"example.com/trace": "t2"}, Name: "fs__review", Arguments: map[string]string{"topic": "meta"},
	})
	require.NoError(t, err)
	require.Equal(t, "review meta", gp.Messages[0].Content.(*sdk.TextContent).Text)
	require.Contains(t, sent(f.fs), `"example.com/trace":"t2"`)
	require.NotContains(t, sent(f.fs), "io.modelcontextprotocol/")

	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	require.Equal(t, "hi", text(t, r))
	require.NotContains(t, sent(f.fs), "io.modelcontextprotocol/")

	// The upstream that speaks 2026-07-28 gets the gateway's own
	// io.modelcontextprotocol/ keys, not the client's.
	rr, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "tollgate://github/file:///readme"})
	require.NoError(t, err)
	require.Equal(t, "contents of file:///readme", rr.Contents[0].Text)
	require.Contains(t, sent(f.gh), `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`)
	require.NotContains(t, sent(f.gh), `"test-client"`, "the gateway's clientInfo, not the agent's")
}
