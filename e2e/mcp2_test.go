package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// TestMCPV2Client drives the gateway with the v2 TypeScript client
// (@modelcontextprotocol/client, pinned to protocol 2026-07-28: no
// handshake, no session, Mcp-Method/Mcp-Name headers) in front of
// server-everything: the list filtered by grants (which the client validates
// against its schema, cacheScope included), a call, a denied call.
func TestMCPV2Client(t *testing.T) {
	s := startSystem(t)
	everything := startEverything(t, s)
	s.cli(nil, nil, "mcp-server", "create", "everything", "--url", everything, "--price-per-call", "0.01")
	keyID, key := s.createKey("--alias", "agent-v2", "--mcp-tools", "everything/echo,everything/get-sum")
	s.waitKey(key)
	testenv.NodePackage(t, "@modelcontextprotocol/client")

	var out struct {
		Era      string   `json:"era"`
		Protocol string   `json:"protocol"`
		Session  *string  `json:"session"`
		Tools    []string `json:"tools"`
		Call     struct {
			Text    string `json:"text"`
			IsError bool   `json:"isError"`
		} `json:"call"`
		Denied  mcpCall `json:"denied"`
		Headers []struct {
			Method, Name, Version string
		} `json:"headers"`
	}
	env := []string{"TOLLGATE_MCP_URL=" + s.url + "/mcp", "TOOL=everything__echo", `ARGS={"message":"v2 hello"}`, "DENIED=everything__get-env"}
	require.Eventually(t, func() bool { // the server reaches the replica's configuration
		s.node("mcp2.mjs", "", key, &out, env...)
		return len(out.Tools) == 2
	}, 10*time.Second, 200*time.Millisecond, "tools: %v", out.Tools)
	require.Equal(t, "2026-07-28", out.Protocol)
	require.Nil(t, out.Session, "no session in 2026-07-28")
	require.Equal(t, []string{"everything__echo", "everything__get-sum"}, out.Tools)
	require.False(t, out.Call.IsError)
	require.Contains(t, out.Call.Text, "v2 hello")
	require.False(t, out.Denied.OK)
	require.Equal(t, -32041, out.Denied.Error.Code, "%+v", out.Denied)
	require.Contains(t, out.Denied.Error.Message, `no mcp-tools grant matching "everything/get-env"`)
	var sawCall bool
	for _, h := range out.Headers {
		require.Equal(t, "2026-07-28", h.Version, "%+v", out.Headers)
		sawCall = sawCall || (h.Method == "tools/call" && h.Name == "everything__echo")
	}
	require.True(t, sawCall, "Mcp-Method/Mcp-Name on the call: %+v", out.Headers)

	require.Eventually(t, func() bool {
		for _, r := range s.ledger(keyID) {
			if r.Model == "mcp:everything/echo" && r.Cost.NanoUSD == 10_000_000 {
				return true
			}
		}
		return false
	}, 10*time.Second, 200*time.Millisecond, "the call's ledger row")
}
