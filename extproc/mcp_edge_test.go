package extproc

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
	"github.com/tollgate-ai/tollgate/xds"
)

// mcpCatalog: key "tg-mcp-read" may call github/echo only.
type mcpCatalog struct{}

func (mcpCatalog) Authenticate(_ context.Context, secret string) (*mcp.Caller, error) {
	if secret != "tg-mcp-read" {
		return nil, mcp.ErrUnauthorized
	}
	return &mcp.Caller{
		KeyID: "read", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "read"}}},
		Grants: []mcp.Grant{{Level: "key read", Patterns: []string{"github/echo"}}},
	}, nil
}

func (mcpCatalog) Servers() []*mcp.Server {
	return []*mcp.Server{{ID: "github", URL: "http://github.invalid/mcp"}}
}

// countingAuthorizer counts the bodies the processor asked for.
type countingAuthorizer struct {
	*mcp.EdgeAuthorizer
	bodies atomic.Int64
}

func (c *countingAuthorizer) MCPBody(ctx context.Context, r *http.Request, body []byte) (int, http.Header, []byte) {
	c.bodies.Add(1)
	return c.EdgeAuthorizer.MCPBody(ctx, r, body)
}

// mcpPost is a POST of an MCP request; method and name, when set, travel
// as a 2026-07-28 client sends them.
func mcpPost(path, key, body, method, name string) *extprocfiltertest.Request {
	var extra []extprocfilter.Header
	if method != "" {
		extra = append(extra,
			extprocfilter.Header{Key: "mcp-protocol-version", Value: "2026-07-28"},
			extprocfilter.Header{Key: "mcp-method", Value: method},
			extprocfilter.Header{Key: "mcp-name", Value: name})
	}
	extra = append(extra, extprocfilter.Header{Key: "accept", Value: "application/json, text/event-stream"})
	return post(path, key, body, extra...)
}

func toolCall(id any, name string) string {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": map[string]any{"text": "hi"}},
	})
	return string(b)
}

// rpcError reads a JSON-RPC error response.
func rpcError(t *testing.T, body []byte) (id any, code int64, msg string) {
	t.Helper()
	var r struct {
		ID    any `json:"id"`
		Error struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &r), string(body))
	return r.ID, r.Error.Code, r.Error.Message
}

// TestMCPAuthorizedAtTheEdge drives the /mcp route as Envoy runs it (the
// xDS route's processing mode, the filter-level mode and mode_override
// merged as Envoy does): refusals are the processor's immediate responses,
// allowed requests reach the MCP service untouched, its replies bypass
// the processor, and nothing is admitted or charged.
func TestMCPAuthorizedAtTheEdge(t *testing.T) {
	auth := &countingAuthorizer{EdgeAuthorizer: mcp.NewEdgeAuthorizer(mcpCatalog{}, nil)}
	e := newTestEnv(t, WithMCP(auth))
	var msgs atomic.Int64 // ext_proc messages the processor handled
	e.proc.observe = func(time.Duration) { msgs.Add(1) }
	do := func(req *extprocfiltertest.Request, up extprocfiltertest.Upstream) *extprocfiltertest.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := extprocfiltertest.DoWith(ctx, e.client, req, up, extprocfilter.WithRouteMode(xds.MCPProcessingMode()))
		require.NoError(t, err)
		require.Empty(t, resp.Failures, "the Envoy client caught a protocol violation")
		return resp
	}
	const okReply = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`
	service := &recorder{resp: jsonResponse(http.StatusOK, okReply)}

	t.Run("no key: 401", func(t *testing.T) {
		for _, key := range []string{"", "tg-wrong"} {
			resp := do(mcpPost("/mcp", key, toolCall(1, "github__echo"), "tools/call", "github__echo"), service.upstream)
			require.NotNil(t, resp.LocalReply)
			require.Nil(t, resp.Forwarded)
			require.Equal(t, http.StatusUnauthorized, resp.Status)
			require.Contains(t, resp.Headers.Value("www-authenticate"), `Bearer realm="tollgate"`)
			require.Equal(t, "application/json", resp.Headers.Value("content-type"))
			_, code, _ := rpcError(t, resp.Body)
			require.Equal(t, int64(mcp.CodeUnauthorized), code)
		}
		require.Zero(t, auth.bodies.Load(), "decided at the headers")
	})

	t.Run("denied by the headers (2026-07-28)", func(t *testing.T) {
		before := auth.bodies.Load()
		resp := do(mcpPost("/mcp", "tg-mcp-read", toolCall(7, "github__delete_all"), "tools/call", "github__delete_all"), service.upstream)
		require.Nil(t, resp.Forwarded, "refused at the edge")
		require.Equal(t, http.StatusOK, resp.Status, "a JSON-RPC error, as the MCP service answers")
		id, code, msg := rpcError(t, resp.Body)
		require.InDelta(t, 7, id, 0, "the response to the request's id")
		require.Equal(t, int64(mcp.CodeToolNotGranted), code)
		require.Equal(t, `tool "github__delete_all" is not granted: key read has no mcp-tools grant matching "github/delete_all"`, msg)
		require.Equal(t, before+1, auth.bodies.Load(), "the body was asked for its id only")
	})

	t.Run("denied by the body (2025-11-25)", func(t *testing.T) {
		resp := do(mcpPost("/mcp/github", "tg-mcp-read", toolCall("a", "delete_all"), "", ""), service.upstream)
		require.Nil(t, resp.Forwarded)
		require.Equal(t, http.StatusOK, resp.Status)
		id, code, msg := rpcError(t, resp.Body)
		require.Equal(t, "a", id)
		require.Equal(t, int64(mcp.CodeToolNotGranted), code)
		require.Contains(t, msg, `tool "delete_all" is not granted`)
	})

	t.Run("allowed: continue", func(t *testing.T) {
		for _, tc := range []struct {
			name, method, mcpName string
			bodies, msgs          int64
		}{
			{"2026-07-28 by the headers, body unread", "tools/call", "github__echo", 0, 1},
			{"2025-11-25 by the body", "", "", 1, 2},
		} {
			before, msgsBefore := auth.bodies.Load(), msgs.Load()
			body := toolCall(1, "github__echo")
			resp := do(mcpPost("/mcp", "tg-mcp-read", body, tc.method, tc.mcpName), service.upstream)
			require.Nil(t, resp.LocalReply, tc.name)
			require.NotNil(t, resp.Forwarded, tc.name)
			require.Equal(t, body, string(resp.Forwarded.Body), "forwarded untouched: %s", tc.name)
			require.Equal(t, "Bearer tg-mcp-read", resp.Forwarded.Headers.Value("authorization"), "the service authenticates it again")
			require.Equal(t, strconv.Itoa(len(body)), resp.Forwarded.Headers.Value("content-length"))
			require.Equal(t, okReply, string(resp.Body))
			require.False(t, resp.Headers.Has(hdrRequestID), "the reply bypasses the processor: %s", tc.name)
			require.Equal(t, tc.bodies, auth.bodies.Load()-before, tc.name)
			require.Equal(t, tc.msgs, msgs.Load()-msgsBefore, "request headers (and body) only, no response phase: %s", tc.name)
		}
		// A server stream (GET) and a list go on too; an SSE reply streams through.
		resp := do(get("/mcp", "tg-mcp-read"), service.upstream)
		require.NotNil(t, resp.Forwarded)
		sse := "event: message\ndata: " + okReply + "\n\n"
		resp = do(mcpPost("/mcp", "tg-mcp-read", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "tools/list", ""),
			func(*extprocfiltertest.ForwardedRequest) *extprocfiltertest.UpstreamResponse {
				return sseResponse(sse, 7)
			})
		require.NotNil(t, resp.Forwarded)
		require.Equal(t, sse, string(resp.Body))
	})

	require.Empty(t, e.acct.admits, "the edge only authorizes: the MCP service admits and settles")
	require.Empty(t, e.acct.records)

	t.Run("a Host off the allow-list: 403", func(t *testing.T) {
		hosts := newTestEnv(t, WithMCP(mcp.NewEdgeAuthorizer(mcpCatalog{}, nil, mcp.WithAllowedHosts(mcp.LoopbackHosts))))
		resp := hosts.do(t, mcpPost("/mcp", "tg-mcp-read", toolCall(1, "github__echo"), "tools/call", "github__echo"), service.upstream)
		require.Nil(t, resp.Forwarded)
		require.Equal(t, http.StatusForbidden, resp.Status, ":authority gateway.local is not a loopback name")
		_, code, _ := rpcError(t, resp.Body)
		require.Equal(t, int64(mcp.CodeHostNotAllowed), code)
	})

	t.Run("without an authorizer /mcp is unknown", func(t *testing.T) {
		plain := newTestEnv(t)
		resp := plain.do(t, mcpPost("/mcp", clientKey, toolCall(1, "x"), "", ""), service.upstream)
		require.Equal(t, http.StatusNotFound, resp.Status)
	})
}
