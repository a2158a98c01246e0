package e2e

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// TestMCPClaudeCode wires Claude Code (npm @anthropic-ai/claude-code, pinned)
// to the MCP gateway as docs/mcp.md tells a team to: `claude mcp add
// --transport http tollgate <gateway>/mcp --header "Authorization: Bearer
// <key>"`, then `claude mcp list` shows it connected. Then one tool call with
// no model: mockllm answers Claude Code's request (through the gateway) with
// a call of the MCP tool (x-mock-tool-call), Claude Code calls it through
// /mcp, and the call is in the ledger, charged to the key.
func TestMCPClaudeCode(t *testing.T) {
	testenv.NodePackage(t, "@anthropic-ai/claude-code")
	s := startSystem(t)
	weather := weatherServer(t)
	s.cli(nil, nil, "mcp-server", "create", "weather", "--url", weather, "--price-per-call", "0.002")
	keyID, key := s.createKey("--alias", "claude-code", "--mcp-tools", "weather/*", "--models", "demo")
	s.waitKey(key)

	home, dir := t.TempDir(), t.TempDir()
	claude := func(args ...string) (string, error) {
		bin, err := filepath.Abs("node_modules/.bin/claude")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+home,
			"ANTHROPIC_BASE_URL="+s.url, "ANTHROPIC_API_KEY="+key,
			"ANTHROPIC_CUSTOM_HEADERS=x-mock-tool-call: mcp__tollgate__weather__get_weather", "ENABLE_TOOL_SEARCH=false", // MCP tools in the request itself, not deferred behind tool search
			"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "NO_COLOR=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr, cmd.Stdin = &out, &out, strings.NewReader("")
		err = cmd.Run()
		return out.String(), err
	}

	out, err := claude("mcp", "add", "--transport", "http", "tollgate", s.url+"/mcp", "--header", "Authorization: Bearer "+key)
	require.NoError(t, err, out)
	var list string
	require.Eventually(t, func() bool { // the server reaches the replica's configuration
		list, err = claude("mcp", "list")
		return err == nil && strings.Contains(list, "tollgate") && strings.Contains(list, "Connected")
	}, 60*time.Second, time.Second, "claude mcp list: %s (%v)", list, err)
	require.Contains(t, list, s.url+"/mcp")

	// One turn of the model (mockllm calls the tool), the tool call, then
	// the model's second turn calls it again and Claude Code stops at
	// --max-turns: what matters is the call that went through the gateway.
	out, _ = claude("-p", "What is the weather in Lyon", "--max-turns", "2", "--output-format", "stream-json", "--verbose",
		"--allowedTools", "mcp__tollgate__weather__get_weather")
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = rows[:0]
		for _, r := range s.ledger(keyID) {
			if r.Model == "mcp:weather/get_weather" {
				rows = append(rows, r)
			}
		}
		return len(rows) > 0
	}, 10*time.Second, 200*time.Millisecond, "no MCP call in the ledger; claude -p printed:\n%s", out)
	for _, r := range rows {
		require.Equal(t, "REQUEST_STATUS_COMPLETED", r.Status, "%+v", r)
		require.Equal(t, int64(2_000_000), r.Cost.NanoUSD, "%+v", r)
		require.Equal(t, "mcp:weather", r.Deployment)
	}
	require.Contains(t, out, "sunny in Lyon", "the tool's result reached Claude Code's transcript")
}

// weatherServer is an MCP server (Go SDK, stateless Streamable HTTP) with
// one tool, get_weather {city}, the shape of mockllm's tool calls.
func weatherServer(t *testing.T) string {
	t.Helper()
	type in struct {
		City string `json:"city"`
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "get_weather", Description: "The weather in a city."},
		func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny in " + a.City}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}
