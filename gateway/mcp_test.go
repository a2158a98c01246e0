package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpUpstream is an MCP server built with the SDK that checks the
// credential the gateway sends.
func mcpUpstream(t *testing.T, stateless bool) *httptest.Server {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "up", Version: "1"}, nil)
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "drop_tables"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "dropped"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: stateless})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer up-secret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func TestMCPThroughTheBuiltInDataPlane(t *testing.T) {
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(v, func(t *testing.T) {
			r := start(t, false)
			up := mcpUpstream(t, v == "2026-07-28")
			sealer, err := secret.NewSealer(make([]byte, 32))
			require.NoError(t, err)
			put(t, r.st, "db", &store.MCPServer{ID: "db", URL: up.URL, Credential: sealer.Seal([]byte("up-secret")), PricePerCall: 2 * kernel.Cent})
			put(t, r.st, "eng", &store.Team{ID: "eng", MCPTools: []string{"db/echo"}})
			s := secret.New("tg-")
			put(t, r.st, "k1", &store.Key{
				ID: "k1", Prefix: secret.Display(s), Hashes: []store.KeyHash{{Hash: secret.Hash(s)}}, TeamID: "eng",
				MCPTools: []string{"db/*"},
			})

			c := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil)
			var cs *sdk.ClientSession
			eventually(t, func() bool {
				cs, err = c.Connect(t.Context(), &sdk.StreamableClientTransport{
					Endpoint: r.url + "/mcp", HTTPClient: &http.Client{Transport: bearerTransport{s}}, DisableStandaloneSSE: true,
				}, &sdk.ClientSessionOptions{ProtocolVersion: v})
				if err != nil {
					return false
				}
				res, err := cs.ListTools(t.Context(), nil)
				if err == nil && len(res.Tools) == 1 {
					return true
				}
				_ = cs.Close()
				return false
			})
			t.Cleanup(func() { _ = cs.Close() })
			res, err := cs.ListTools(t.Context(), nil)
			require.NoError(t, err)
			require.Equal(t, "db__echo", res.Tools[0].Name, "the team's grant narrows the key's")

			out, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "db__echo", Arguments: map[string]any{"text": "hello"}})
			require.NoError(t, err)
			require.Equal(t, "hello", out.Content[0].(*sdk.TextContent).Text)
			_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "db__drop_tables"})
			require.ErrorContains(t, err, "team eng has no mcp-tools grant")

			// The call is in the ledger as an MCP row charged to the key and its team.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			require.NoError(t, r.st.Flush(ctx))
			var rows []store.LedgerEntry
			eventually(t, func() bool {
				_ = r.st.Flush(ctx)
				rows, err = r.st.Entries(ctx, store.LedgerFilter{Model: "mcp:db/echo"})
				return err == nil && len(rows) == 1
			})
			require.Equal(t, "k1", rows[0].KeyID)
			require.Equal(t, "eng", rows[0].TeamID)
			require.Equal(t, 2*kernel.Cent, rows[0].Cost)
			server, tool, ok := rows[0].MCPCall()
			require.True(t, ok)
			require.Equal(t, "db", server)
			require.Equal(t, "echo", tool)

			// The MCP service Envoy's /mcp route reaches serves the same.
			direct, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
				Endpoint: "http://" + r.g.MCPAddr + "/mcp/db", HTTPClient: &http.Client{Transport: bearerTransport{s}}, DisableStandaloneSSE: true,
			}, &sdk.ClientSessionOptions{ProtocolVersion: v})
			require.NoError(t, err)
			defer func() { _ = direct.Close() }()
			res, err = direct.ListTools(t.Context(), nil)
			require.NoError(t, err)
			require.Len(t, res.Tools, 1)
			require.Equal(t, "echo", res.Tools[0].Name, "one server, its own names")

			// No key: 401 with a challenge, on the data plane's port.
			resp, err := http.Post(r.url+"/mcp", "application/json", nil)
			require.NoError(t, err)
			_ = resp.Body.Close()
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
			require.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
		})
	}
}
