package mcp

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// A relayed result gets resultType "complete" for a 2026-07-28 client (the
// v2 TypeScript client refuses a tools/call result without it); an
// upstream's own resultType is kept; other results pass unchanged.
func TestMarkComplete(t *testing.T) {
	res := markComplete(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}})
	b, err := json.Marshal(res)
	require.NoError(t, err)
	require.JSONEq(t, `{"resultType":"complete","content":[{"type":"text","text":"hi"}]}`, string(b))

	var up sdk.CallToolResult
	require.NoError(t, json.Unmarshal([]byte(`{"resultType":"input_required","content":[]}`), &up))
	require.True(t, markComplete(&up).(*sdk.CallToolResult).NeedsInput(), "the upstream's resultType wins")

	b, err = json.Marshal(markComplete(&sdk.ReadResourceResult{Cacheable: perKey()}))
	require.NoError(t, err)
	require.Contains(t, string(b), `"resultType":"complete"`)
	require.Contains(t, string(b), `"cacheScope":"private"`)

	list := &sdk.ListToolsResult{}
	require.Same(t, list, markComplete(list))
}
