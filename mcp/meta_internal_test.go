package mcp

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// forwardMeta drops the protocol's own keys, keeps the rest, and never
// hands the agent's map on (the upstream client writes into it).
func TestForwardMeta(t *testing.T) {
	in := sdk.Meta{
		sdk.MetaKeyProtocolVersion: "2026-07-28", sdk.MetaKeyClientInfo: map[string]any{"name": "agent"},
		sdk.MetaKeyClientCapabilities: map[string]any{}, "progressToken": "p1", "example.com/trace": "t1",
	}
	out := forwardMeta(in)
	require.Equal(t, sdk.Meta{"progressToken": "p1", "example.com/trace": "t1"}, out)
	out["x"] = 1
	require.NotContains(t, in, "x", "a copy")
	require.Len(t, in, 5, "the agent's map is unchanged")

	require.Nil(t, forwardMeta(nil))
	require.Nil(t, forwardMeta(sdk.Meta{sdk.MetaKeyProtocolVersion: "2026-07-28"}), "nothing left: no _meta")
}
