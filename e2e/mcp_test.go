package e2e

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// startEverything runs the reference MCP server
// (@modelcontextprotocol/server-everything, Streamable HTTP on /mcp) and
// returns its endpoint.
func startEverything(t *testing.T, s *system) string {
	t.Helper()
	nodeBin := testenv.Node(t)
	testenv.NodePackage(t, "@modelcontextprotocol/server-everything")
	addr := testenv.FreeAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(nodeBin, filepath.Join("node_modules", ".bin", "mcp-server-everything"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://127.0.0.1:" + port + "/mcp"
	s.waitServing(url, "server-everything")
	return url
}

// waitServing waits until url answers HTTP (any status).
func (s *system) waitServing(url, what string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return true
	}, 30*time.Second, 50*time.Millisecond, "%s did not start:\n%s", what, s.logs.String())
}

// mcpNode runs one scenario of mcp.mjs.
func (s *system) mcpNode(scenario, url, key string, out any, env ...string) {
	s.t.Helper()
	testenv.NodePackage(s.t, "@modelcontextprotocol/sdk")
	s.node("mcp.mjs", scenario, key, out, append([]string{"TOLLGATE_MCP_URL=" + url}, env...)...)
}

type mcpCall struct {
	OK      bool   `json:"ok"`
	Text    string `json:"text"`
	IsError bool   `json:"isError"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// TestMCPGateway drives the MCP gateway with the official TypeScript SDK
// (2025-11-25) in front of the reference server-everything and the demo MCP
// server: lists filtered by grants, aggregated and per-server names, calls,
// a denied call, 401, a strict budget refusing the call that would
// overspend, one session served by two replicas in turn, and the ledger's
// rows matching the calls.
func TestMCPGateway(t *testing.T) {
	s := startSystem(t)
	everything := startEverything(t, s)
	s.cli(nil, nil, "mcp-server", "create", "everything", "--url", everything, "--price-per-call", "0.01", "--tool-price", "get-sum=0")
	keyID, key := s.createKey("--alias", "agent", "--mcp-tools", "everything/echo,everything/get-sum,demo/*", "--budget", "0.025")
	s.waitKey(key)
	mcpURL := s.url + "/mcp"

	var list struct {
		Protocol string   `json:"protocol"`
		Session  string   `json:"session"`
		Tools    []string `json:"tools"`
	}
	require.Eventually(t, func() bool {
		s.mcpNode("list", mcpURL, key, &list)
		return len(list.Tools) == 5
	}, 10*time.Second, 200*time.Millisecond, "tools: %v", list.Tools)
	require.Equal(t, []string{"demo__add", "demo__echo", "demo__word_count", "everything__echo", "everything__get-sum"}, list.Tools,
		"only the granted tools, named SERVER__TOOL")
	require.Equal(t, "2025-11-25", list.Protocol)
	require.True(t, strings.HasPrefix(list.Session, "tgs1."), "a sealed session token: %q", list.Session)

	s.mcpNode("list", mcpURL+"/everything", key, &list)
	require.Equal(t, []string{"echo", "get-sum"}, list.Tools, "one server, its own names")

	var call mcpCall
	s.mcpNode("call", mcpURL, key, &call, "TOOL=everything__get-sum", `ARGS={"a":2,"b":3}`)
	require.True(t, call.OK, "%+v", call)
	require.Contains(t, call.Text, "5")

	s.mcpNode("call", mcpURL, key, &call, "TOOL=everything__get-env", `ARGS={}`)
	require.False(t, call.OK)
	require.Equal(t, -32041, call.Error.Code)
	require.Contains(t, call.Error.Message, `no mcp-tools grant matching "everything/get-env"`)

	s.mcpNode("unauthorized", mcpURL, "", &call)
	require.False(t, call.OK)
	require.Equal(t, http.StatusUnauthorized, call.Error.Code, "%+v", call)
	require.Contains(t, call.Error.Message, "missing api key")

	// $0.025 strict budget, echo at $0.01: two calls, the third refused.
	for i := range 2 {
		s.mcpNode("call", mcpURL, key, &call, "TOOL=everything__echo", `ARGS={"message":"hi `+strconv.Itoa(i)+`"}`)
		require.True(t, call.OK, "%+v", call)
		require.Contains(t, call.Text, "hi "+strconv.Itoa(i))
	}
	s.mcpNode("call", mcpURL, key, &call, "TOOL=everything__echo", `ARGS={"message":"one too many"}`)
	require.False(t, call.OK)
	require.Equal(t, -32043, call.Error.Code, "%+v", call)

	// Resources and prompts: a key granted everything/* sees them, named per
	// server; the first key (tools only) sees none and is refused a read.
	_, allKey := s.createKey("--alias", "reader", "--mcp-tools", "everything/*")
	s.waitKey(allKey)
	var res struct {
		Capabilities []string `json:"capabilities"`
		Resources    []string `json:"resources"`
		Templates    []string `json:"templates"`
		Prompts      []string `json:"prompts"`
		Read         struct {
			URI  string `json:"uri"`
			Size int    `json:"size"`
		} `json:"read"`
		Prompt string  `json:"prompt"`
		Denied mcpCall `json:"denied"`
	}
	s.mcpNode("resources", mcpURL, allKey, &res, "PROMPT=everything__args-prompt", `ARGS={"city":"Lyon"}`)
	require.Subset(t, res.Capabilities, []string{"prompts", "resources", "tools"})
	require.NotEmpty(t, res.Resources)
	for _, u := range res.Resources {
		require.True(t, strings.HasPrefix(u, "tollgate://everything/demo://"), u)
	}
	require.NotEmpty(t, res.Templates)
	require.True(t, strings.HasPrefix(res.Templates[0], "tollgate://everything/demo://"), res.Templates[0])
	require.Contains(t, res.Prompts, "everything__args-prompt")
	require.Equal(t, res.Resources[0], res.Read.URI, "the read's contents name the URI the agent asked for")
	require.Positive(t, res.Read.Size)
	require.Equal(t, "What's weather in Lyon?", res.Prompt)

	var one struct {
		Resources []string `json:"resources"`
		Prompts   []string `json:"prompts"`
	}
	s.mcpNode("resources", mcpURL+"/everything", allKey, &one)
	require.NotEmpty(t, one.Resources)
	require.True(t, strings.HasPrefix(one.Resources[0], "demo://"), "its own URIs on /mcp/everything: %q", one.Resources[0])
	require.Contains(t, one.Prompts, "args-prompt")

	s.mcpNode("resources", mcpURL, key, &res, "DENIED_URI="+res.Resources[0])
	require.Empty(t, res.Resources, "tools-only grants: no resources")
	require.Empty(t, res.Prompts)
	require.False(t, res.Denied.OK)
	require.Equal(t, -32041, res.Denied.Error.Code, "%+v", res.Denied)
	require.Contains(t, res.Denied.Error.Message, `no mcp-tools grant matching "everything/resource:*"`)

	// A second replica on the same database serves the same session.
	second := s.replica(t)
	var sess struct {
		Session  string   `json:"session"`
		Replicas int      `json:"replicas"`
		Echoes   []string `json:"echoes"`
	}
	s.mcpNode("session", mcpURL, key, &sess, "TOOL=demo__echo", "ARG_NAME=text", "TOLLGATE_MCP_REPLICAS="+s.url+","+second)
	require.Equal(t, 2, sess.Replicas)
	require.Equal(t, []string{"hop 0", "hop 1", "hop 2", "hop 3"}, sess.Echoes)
	require.True(t, strings.HasPrefix(sess.Session, "tgs1."))

	// The ledger: one row per call that ran, at its price; none for refusals.
	var rows []ledgerRow
	require.Eventually(t, func() bool {
		rows = nil
		for _, r := range s.ledger(keyID) {
			if strings.HasPrefix(r.Model, "mcp:") {
				rows = append(rows, r)
			}
		}
		return len(rows) >= 3
	}, 10*time.Second, 200*time.Millisecond)
	byModel := map[string][]int64{}
	for _, r := range rows {
		byModel[r.Model] = append(byModel[r.Model], r.Cost.NanoUSD)
	}
	require.Equal(t, []int64{0}, byModel["mcp:everything/get-sum"])
	require.Equal(t, []int64{10_000_000, 10_000_000}, byModel["mcp:everything/echo"])
	require.NotContains(t, byModel, "mcp:everything/get-env")
}

// replica starts a second `tollgate run` on the system's database (and
// master key), with extra flags, and returns its data-plane URL.
func (s *system) replica(t *testing.T, flags ...string) string {
	t.Helper()
	listen := testenv.FreeAddr(t)
	_, done := startProcess(t, s.logs, []string{"TOLLGATE_ADMIN_KEY=" + adminKey}, "tollgate", append([]string{
		"run",
		"--db", filepath.Join(s.dir, "tollgate.db"),
		"--listen", listen, "--admin-addr", testenv.FreeAddr(t),
		"--xds-addr", testenv.FreeAddr(t), "--extproc-addr", testenv.FreeAddr(t), "--metrics-addr", testenv.FreeAddr(t),
		"--log-level", "warn",
	}, flags...)...)
	url := "http://" + listen
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		select {
		case <-done:
			t.Fatalf("the second replica exited:\n%s", s.logs.String())
		default:
		}
		req, _ := http.NewRequest(http.MethodGet, url+"/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+s.demoKey)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the second replica did not serve within 60s:\n%s", s.logs.String())
	return ""
}
