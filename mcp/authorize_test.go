package mcp_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/mcp"
)

// edgeProxy is a data plane's edge in front of the MCP service, as the
// ext_proc processor is on Envoy: it asks the EdgeAuthorizer about the
// headers, reads the body only when asked, and answers refusals itself.
type edgeProxy struct {
	a       *mcp.EdgeAuthorizer
	next    http.Handler
	bodies  atomic.Int64 // requests whose body the edge read
	refused atomic.Int64
	passed  atomic.Int64
}

func (e *edgeProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, h, body, needBody := e.a.MCPHeaders(r.Context(), r)
	if status == 0 && needBody {
		e.bodies.Add(1)
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		status, h, body = e.a.MCPBody(r.Context(), r, b)
	}
	if status != 0 {
		e.refused.Add(1)
		for k, v := range h {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return
	}
	e.passed.Add(1)
	e.next.ServeHTTP(w, r)
}

// events records what an observer hears.
type events struct {
	mu  sync.Mutex
	evs []mcp.Event
}

func (o *events) Observe(_ context.Context, ev *mcp.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, *ev)
}

// newEdge puts an edge in front of a fresh MCP service of f.
func newEdge(t *testing.T, f *fixture) (*edgeProxy, *events, string) {
	t.Helper()
	obs := &events{}
	h := mcp.New(f.cat, f.acct, f.sealer)
	t.Cleanup(h.Close)
	e := &edgeProxy{a: mcp.NewEdgeAuthorizer(f.cat, obs), next: h}
	s := httptest.NewServer(e)
	t.Cleanup(s.Close)
	return e, obs, s.URL
}

func connectTo(t *testing.T, url, key, version string) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: &keyTransport{key: key}}, DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestEdgeRefusesLikeTheService: through the edge, an SDK client of either
// protocol version gets for a call its grants do not cover the very error
// the service sends (it matches the request's id, or the SDK would not
// deliver it), refused before the service; a 2026-07-28 client's allowed
// calls go on without the edge reading their body.
func TestEdgeRefusesLikeTheService(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			f := newFixture(t, v == "2026-07-28")
			edge, obs, url := newEdge(t, f)
			direct := connectTo(t, f.gateways[0].URL+"/mcp", keyRead, v)
			cs := connectTo(t, url+"/mcp", keyRead, v)
			bodiesBefore := edge.bodies.Load()

			r, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err)
			require.Equal(t, "hi", text(t, r))
			if v == "2026-07-28" {
				require.Equal(t, bodiesBefore, edge.bodies.Load(), "Mcp-Method/Mcp-Name decide an allowed call")
			} else {
				require.Equal(t, bodiesBefore+1, edge.bodies.Load(), "a 2025-11-25 call is decided from its body")
			}

			_, want := direct.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__delete_all"})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, want))
			passed := edge.passed.Load()
			_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__delete_all"})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
			require.Equal(t, want.Error(), err.Error(), "the service's own error")
			require.Equal(t, passed, edge.passed.Load(), "refused at the edge")
			require.Equal(t, int64(1), edge.refused.Load())

			_, err = cs.GetPrompt(t.Context(), &sdk.GetPromptParams{Name: "github__review", Arguments: map[string]string{"topic": "x"}})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
			require.ErrorContains(t, err, `"github/prompt:review"`)
			_, err = cs.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: "tollgate://github/file:///readme"})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
			require.Equal(t, int64(3), edge.refused.Load())

			single := connectTo(t, url+"/mcp/github", keyRead, v)
			_, err = single.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_all"})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
			require.ErrorContains(t, err, `tool "delete_all" is not granted`)

			// Allowed elsewhere, unknown names: the service answers.
			r, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "fs"}})
			require.NoError(t, err)
			require.Equal(t, "fs", text(t, r))
			passed = edge.passed.Load()
			_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "nosuch__echo"})
			require.Error(t, err)
			require.Equal(t, passed+1, edge.passed.Load())

			require.Len(t, f.acct.ledger, 2, "the edge charges nothing; the service settled each call that ran")
			obs.mu.Lock()
			defer obs.mu.Unlock()
			require.Len(t, obs.evs, 4, "one event per refusal, as the service reports it")
			ev := obs.evs[0]
			require.Equal(t, "tools/call", ev.Method)
			require.Equal(t, "github", ev.Server)
			require.Equal(t, "delete_all", ev.Tool)
			require.Equal(t, "read", ev.Caller.KeyID)
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, ev.Err))
		})
	}
}

// TestEdgeUnauthorized: no key, a bad key and an unknown /mcp/SERVER get
// the service's exact replies.
func TestEdgeUnauthorized(t *testing.T) {
	f := newFixture(t, true)
	a := mcp.NewEdgeAuthorizer(f.cat, nil)
	h := mcp.New(f.cat, f.acct, f.sealer)
	t.Cleanup(h.Close)
	for _, tc := range []struct{ key, path string }{{"", "/mcp"}, {"tg-wrong", "/mcp"}, {"", "/mcp/github"}, {keyRead, "/mcp/nosuch"}} {
		req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if tc.key != "" {
			req.Header.Set("Authorization", "Bearer "+tc.key)
		}
		status, hdr, body, needBody := a.MCPHeaders(t.Context(), req)
		require.False(t, needBody)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, w.Code, status, tc)
		require.Equal(t, w.Body.String(), string(body), tc)
		require.Equal(t, w.Header().Get("WWW-Authenticate"), hdr.Get("WWW-Authenticate"), tc)
		require.Equal(t, "application/json", hdr.Get("Content-Type"))
	}

	// The Host/Origin allow-list, before the key (DNS rebinding: 403).
	ah := mcp.NewEdgeAuthorizer(f.cat, nil, mcp.WithAllowedHosts(mcp.LoopbackHosts))
	hh := mcp.New(f.cat, f.acct, f.sealer, mcp.WithAllowedHosts(mcp.LoopbackHosts))
	t.Cleanup(hh.Close)
	for _, tc := range []struct{ host, origin, key string }{
		{"evil.example", "", ""}, {"localhost:8080", "http://evil.example", keyRead}, {"127.0.0.1:8080", "", ""},
	} {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Host = tc.host
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.key != "" {
			req.Header.Set("Authorization", "Bearer "+tc.key)
		}
		status, _, body, _ := ah.MCPHeaders(t.Context(), req)
		w := httptest.NewRecorder()
		hh.ServeHTTP(w, req)
		require.Equal(t, w.Code, status, tc)
		require.Equal(t, w.Body.String(), string(body), tc)
	}
	require.Equal(t, http.StatusUnauthorized, func() int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		req.Host = "127.0.0.1"
		status, _, _, _ := ah.MCPHeaders(t.Context(), req)
		return status
	}(), "an allowed host without a key: 401")

	req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+keyNone)
	status, _, _, needBody := a.MCPHeaders(t.Context(), req)
	require.Zero(t, status, "a key without grants still reaches the service (it lists nothing)")
	require.False(t, needBody, "GET has no body")
}
