package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
)

// upstream is a real MCP server built with the SDK: stateless (it speaks
// 2026-07-28) or with sessions (2025-11-25).
type upstream struct {
	*httptest.Server
	calls    atomic.Int64
	sessions sync.Map // Mcp-Session-Id values seen
	deleted  sync.Map // Mcp-Session-Id values DELETEd
	inits    atomic.Int64
	last     atomic.Value // the session id of the last tool call
	auth     atomic.Value
	body     atomic.Value // the body of the last POST
}

type echoArgs struct {
	Text string `json:"text"`
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

func newUpstream(t *testing.T, stateless bool) *upstream {
	t.Helper()
	u := &upstream{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "test-upstream", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, req *sdk.CallToolRequest, in echoArgs) (*sdk.CallToolResult, any, error) {
		u.calls.Add(1)
		u.last.Store(req.Session.ID())
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "add"}, func(_ context.Context, _ *sdk.CallToolRequest, in addArgs) (*sdk.CallToolResult, any, error) {
		u.calls.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: jsonString(in.A + in.B)}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "delete_all"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		u.calls.Add(1)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "deleted"}}}, nil, nil
	})
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "contents of " + req.Params.URI}}}, nil
	}
	srv.AddResource(&sdk.Resource{Name: "readme", URI: "file:///readme", MIMEType: "text/plain"}, read)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "note", URITemplate: "file:///notes/{name}"}, read)
	srv.AddPrompt(&sdk.Prompt{Name: "review", Arguments: []*sdk.PromptArgument{{Name: "topic", Required: true}}}, func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{
			{Role: "user", Content: &sdk.TextContent{Text: "review " + req.Params.Arguments["topic"]}},
			{Role: "user", Content: &sdk.ResourceLink{Name: "readme", URI: "file:///readme"}},
		}}, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: stateless})
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			u.sessions.Store(id, true)
			if r.Method == http.MethodDelete {
				u.deleted.Store(id, true)
			}
		}
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"method":"initialize"`) {
				u.inits.Add(1)
			}
			u.body.Store(string(body))
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		u.auth.Store(r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	return u
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

// catalog is a fixed configuration.
type catalog struct {
	keys    map[string]*mcp.Caller
	servers []*mcp.Server
}

func (c *catalog) Authenticate(_ context.Context, s string) (*mcp.Caller, error) {
	if k, ok := c.keys[s]; ok {
		return k, nil
	}
	return nil, mcp.ErrUnauthorized
}

func (c *catalog) Servers() []*mcp.Server { return c.servers }

// accountant is the kernel in memory with a ledger slice.
type accountant struct {
	st      *kernel.State
	mu      sync.Mutex
	ledger  []mcp.Call
	costs   []kernel.Money
	refused []mcp.Call // RefuseCall's $0 rows
}

func (a *accountant) RefuseCall(_ context.Context, c *mcp.Call) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused = append(a.refused, *c)
	return nil
}

func (a *accountant) Admit(_ context.Context, r *kernel.AdmitRequest) (kernel.Decision, error) {
	return a.st.Admit(time.Now(), r), nil
}

func (a *accountant) SettleCall(_ context.Context, c *mcp.Call) (kernel.Money, error) {
	s, ok := a.st.Settle(time.Now(), c.RequestID, mcp.CallUsage(c.Ran), c.Status)
	if !ok {
		return 0, errors.New("not open")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ledger = append(a.ledger, *c)
	a.costs = append(a.costs, s.Cost)
	return s.Cost, nil
}

type fixture struct {
	cat      *catalog
	acct     *accountant
	sealer   *secret.Sealer
	gh, fs   *upstream
	gateways []*httptest.Server
}

const (
	keyAll   = "tg-all"
	keyRead  = "tg-read"
	keyNone  = "tg-none"
	keyTeamy = "tg-teamy"
)

func newFixture(t *testing.T, upstreamStateless bool) *fixture {
	t.Helper()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	f := &fixture{sealer: sealer, acct: &accountant{st: kernel.NewState()}}
	f.gh = newUpstream(t, upstreamStateless)
	f.fs = newUpstream(t, !upstreamStateless)
	budget := &kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 25 * kernel.Cent}}, Models: []string{"gpt-4o"}}
	f.cat = &catalog{
		servers: []*mcp.Server{
			{ID: "fs", URL: f.fs.URL, PricePerCall: kernel.Cent},
			{ID: "github", URL: f.gh.URL, Headers: map[string]string{"Authorization": "Bearer upstream-secret"}, PricePerCall: 10 * kernel.Cent, ToolPrices: map[string]kernel.Money{"add": 0}},
		},
		keys: map[string]*mcp.Caller{
			keyAll: {
				KeyID: "all", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "all"}, Limits: budget}},
				Grants: []mcp.Grant{{Level: "key all", Patterns: []string{"*/*"}}},
			},
			keyRead: {
				KeyID: "read", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "read"}}},
				Grants: []mcp.Grant{{Level: "key read", Patterns: []string{"github/echo", "fs/*"}}},
			},
			keyNone: {KeyID: "none", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "none"}}}},
			keyTeamy: {
				KeyID: "teamy", TeamID: "eng", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "teamy"}}},
				Grants: []mcp.Grant{{Level: "key teamy", Patterns: []string{"github/*"}}, {Level: "team eng", Patterns: []string{"github/add", "fs/*"}}},
			},
		},
	}
	for range 2 {
		h := mcp.New(f.cat, f.acct, sealer)
		t.Cleanup(h.Close)
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		f.gateways = append(f.gateways, s)
	}
	return f
}

// keyTransport sends the key and, with two gateways, alternates between them.
type keyTransport struct {
	key     string
	targets []string
	n       atomic.Int64
	seen    sync.Map
}

func (k *keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if k.key != "" {
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	if len(k.targets) > 1 {
		target := k.targets[int(k.n.Add(1))%len(k.targets)]
		r.URL.Host = strings.TrimPrefix(target, "http://")
		r.Host = r.URL.Host
		k.seen.Store(r.URL.Host, true)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, f *fixture, key, path, version string, alternate bool) (*sdk.ClientSession, *keyTransport) {
	t.Helper()
	kt := &keyTransport{key: key}
	if alternate {
		for _, g := range f.gateways {
			kt.targets = append(kt.targets, g.URL)
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: f.gateways[0].URL + path, HTTPClient: &http.Client{Transport: kt}, DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, kt
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	return names
}

func text(t *testing.T, r *sdk.CallToolResult) string {
	t.Helper()
	require.Len(t, r.Content, 1)
	return r.Content[0].(*sdk.TextContent).Text
}

func rpcCode(t *testing.T, err error) int64 {
	t.Helper()
	var w *jsonrpc.Error
	require.ErrorAs(t, err, &w)
	return w.Code
}

var versions = []string{"2026-07-28", "2025-11-25"}

func TestListFilteredByGrants(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			f := newFixture(t, v == "2026-07-28")
			cs, _ := connect(t, f, keyAll, "/mcp", v, false)
			require.Equal(t, v, cs.InitializeResult().ProtocolVersion)
			require.Equal(t, []string{"fs__add", "fs__delete_all", "fs__echo", "github__add", "github__delete_all", "github__echo"}, toolNames(t, cs))

			cs, _ = connect(t, f, keyRead, "/mcp", v, false)
			require.Equal(t, []string{"fs__add", "fs__delete_all", "fs__echo", "github__echo"}, toolNames(t, cs))

			cs, _ = connect(t, f, keyNone, "/mcp", v, false)
			require.Empty(t, toolNames(t, cs), "deny by default")

			cs, _ = connect(t, f, keyTeamy, "/mcp", v, false)
			require.Equal(t, []string{"github__add"}, toolNames(t, cs), "the key's grants ∩ its team's")

			cs, _ = connect(t, f, keyRead, "/mcp/github", v, false)
			require.Equal(t, []string{"echo"}, toolNames(t, cs), "one server, its own names")
		})
	}
}

func TestCallsAndRefusals(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			f := newFixture(t, v == "2026-07-28")
			cs, _ := connect(t, f, keyRead, "/mcp", v, false)
			r, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err)
			require.Equal(t, "hi", text(t, r))
			require.Equal(t, "Bearer upstream-secret", f.gh.auth.Load(), "the server's configured credential")

			_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__delete_all"})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
			require.ErrorContains(t, err, `key read has no mcp-tools grant matching "github/delete_all"`)
			require.Equal(t, int64(1), f.gh.calls.Load(), "the denied call never reached the upstream")

			_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "nosuch__echo"})
			require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, err))

			single, _ := connect(t, f, keyRead, "/mcp/fs", v, false)
			r, err = single.CallTool(t.Context(), &sdk.CallToolParams{Name: "add", Arguments: map[string]any{"a": 2, "b": 3}})
			require.NoError(t, err)
			require.Equal(t, "5", text(t, r))

			// The ledger: one row per call that was admitted, with its price.
			require.Len(t, f.acct.ledger, 2)
			require.Equal(t, "github", f.acct.ledger[0].Server)
			require.Equal(t, "echo", f.acct.ledger[0].Tool)
			require.True(t, f.acct.ledger[0].Ran)
			require.Equal(t, 10*kernel.Cent, f.acct.costs[0])
			require.Equal(t, "fs", f.acct.ledger[1].Server)
			require.Equal(t, kernel.Cent, f.acct.costs[1])
		})
	}
}

func TestStrictBudgetRefusesTheCallThatWouldOverspend(t *testing.T) {
	f := newFixture(t, true)
	cs, _ := connect(t, f, keyAll, "/mcp", "2026-07-28", false)
	// Budget 25¢, github/echo 10¢ a call: two calls, then refused.
	for range 2 {
		_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__echo", Arguments: map[string]any{"text": "x"}})
		require.NoError(t, err)
	}
	_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__echo", Arguments: map[string]any{"text": "x"}})
	require.Equal(t, int64(mcp.CodeBudgetExceeded), rpcCode(t, err))
	require.Equal(t, int64(2), f.gh.calls.Load())
	// A free tool still runs; a 1¢ one fits in the 5¢ left.
	_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "github__add", Arguments: map[string]any{"a": 1, "b": 1}})
	require.NoError(t, err)
	_, err = cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": "x"}})
	require.NoError(t, err)
	spent, reserved := f.acct.st.Usage(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "all"}, kernel.Period{}, time.Now())
	require.Equal(t, 21*kernel.Cent, spent)
	require.Zero(t, reserved)
}

func TestUpstreamRefusalCostsNothing(t *testing.T) {
	f := newFixture(t, true)
	cs, _ := connect(t, f, keyAll, "/mcp/github", "2026-07-28", false)
	_, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "no_such_tool"})
	require.Error(t, err)
	require.Len(t, f.acct.ledger, 1)
	require.False(t, f.acct.ledger[0].Ran)
	require.Zero(t, f.acct.costs[0])
	_, reserved := f.acct.st.Usage(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "all"}, kernel.Period{}, time.Now())
	require.Zero(t, reserved, "the reservation is released")
}

func TestUnauthorized(t *testing.T) {
	f := newFixture(t, true)
	for _, key := range []string{"", "tg-wrong"} {
		req, err := http.NewRequest(http.MethodPost, f.gateways[0].URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.Contains(t, res.Header.Get("WWW-Authenticate"), `Bearer realm="tollgate"`)
	}
	res, err := http.Get(f.gateways[0].URL + "/mcp/nosuch")
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusUnauthorized, res.StatusCode, "the key before anything else")
}

func TestSessionServedByEitherReplica(t *testing.T) {
	f := newFixture(t, false)
	cs, kt := connect(t, f, keyAll, "/mcp", "2025-11-25", true)
	require.True(t, strings.HasPrefix(cs.ID(), "tgs1."), "the session id is the gateway's sealed token: %q", cs.ID())
	for i := range 4 {
		r, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "fs__echo", Arguments: map[string]any{"text": jsonString(i)}})
		require.NoError(t, err)
		require.Equal(t, jsonString(i), text(t, r))
	}
	n := 0
	kt.seen.Range(func(any, any) bool { n++; return true })
	require.Equal(t, 2, n, "both replicas served the session")

	// The token is bound to its key: another key presenting it is refused.
	require.Equal(t, http.StatusNotFound, postInSession(t, f.gateways[1].URL+"/mcp", keyRead, cs.ID(), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
}

// postInSession POSTs body with key in session and returns the HTTP status.
func postInSession(t *testing.T, url, key, session, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	return res.StatusCode
}

// A 2025-11-25 agent's upstream session is its own, opened when it
// initializes and carried in its session token: whichever replica serves a
// request (another one, one started after a restart) resumes it instead of
// opening a new one; the agent's DELETE ends it upstream.
func TestUpstreamSessionCarriedInTheToken(t *testing.T) {
	f := newFixture(t, false) // github keeps sessions, fs is stateless
	cs, kt := connect(t, f, keyRead, "/mcp", "2025-11-25", true)
	require.Equal(t, int64(1), f.gh.inits.Load(), "the agent's upstream session is opened at initialize")
	call := func(cs *sdk.ClientSession, name string) string {
		t.Helper()
		r, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}})
		require.NoError(t, err)
		require.Equal(t, "x", text(t, r))
		return f.gh.last.Load().(string)
	}
	first := call(cs, "github__echo")
	require.NotEmpty(t, first)
	for range 3 {
		require.Equal(t, first, call(cs, "github__echo"), "the same upstream session on either replica")
	}
	_ = call(cs, "fs__echo") // a stateless upstream needs no session of the agent's
	require.Equal(t, int64(1), f.gh.inits.Load(), "no replica re-initialized")

	// A replica started afterwards (a restart) resumes it too.
	h := mcp.New(f.cat, f.acct, f.sealer)
	t.Cleanup(h.Close)
	g := httptest.NewServer(h)
	t.Cleanup(g.Close)
	kt.targets = []string{g.URL, g.URL}
	require.Equal(t, first, call(cs, "github__echo"))
	require.Equal(t, int64(1), f.gh.inits.Load())

	// Another agent has a session of its own.
	other, _ := connect(t, f, keyRead, "/mcp/github", "2025-11-25", false)
	require.NotEqual(t, first, call(other, "echo"))
	require.Equal(t, int64(2), f.gh.inits.Load())

	// The upstream drops the session: the next call starts a new one
	// without the agent noticing.
	req, err := http.NewRequest(http.MethodDelete, f.gh.URL, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", first)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	renewed := call(cs, "github__echo")
	require.NotEqual(t, first, renewed)
	require.Equal(t, int64(3), f.gh.inits.Load())

	// Replicas closing do not end a carried session; the agent ending its
	// session does.
	f.gh.deleted.Range(func(k, _ any) bool { f.gh.deleted.Delete(k); return true })
	h.Close()
	_, gone := f.gh.deleted.Load(first)
	require.False(t, gone)
	second := call(other, "echo")
	require.NoError(t, other.Close())
	_, gone = f.gh.deleted.Load(second)
	require.True(t, gone, "the agent's DELETE ended its upstream session")
}

// Resources and prompts are relayed like tools: named per server on /mcp
// (tollgate://SERVER/URI, SERVER__PROMPT), filtered and refused by grants
// (SERVER/resource:* and SERVER/prompt:NAME, which SERVER/* covers).
func TestResourcesAndPrompts(t *testing.T) {
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			f := newFixture(t, v == "2026-07-28")
			ctx := t.Context()
			cs, _ := connect(t, f, keyAll, "/mcp", v, false)
			rl, err := cs.ListResources(ctx, nil)
			require.NoError(t, err)
			var uris []string
			for _, r := range rl.Resources {
				uris = append(uris, r.Name+" "+r.URI)
			}
			require.ElementsMatch(t, []string{"fs__readme tollgate://fs/file:///readme", "github__readme tollgate://github/file:///readme"}, uris)
			tl, err := cs.ListResourceTemplates(ctx, nil)
			require.NoError(t, err)
			require.Len(t, tl.ResourceTemplates, 2)
			require.Contains(t, []string{tl.ResourceTemplates[0].URITemplate, tl.ResourceTemplates[1].URITemplate}, "tollgate://github/file:///notes/{name}")

			rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "tollgate://github/file:///notes/x"})
			require.NoError(t, err)
			require.Len(t, rr.Contents, 1)
			require.Equal(t, "contents of file:///notes/x", rr.Contents[0].Text, "the upstream saw its own URI")
			require.Equal(t, "tollgate://github/file:///notes/x", rr.Contents[0].URI)
			_, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///readme"})
			require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcCode(t, err))

			pl, err := cs.ListPrompts(ctx, nil)
			require.NoError(t, err)
			var prompts []string
			for _, p := range pl.Prompts {
				prompts = append(prompts, p.Name)
			}
			require.ElementsMatch(t, []string{"fs__review", "github__review"}, prompts)
			gp, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: "github__review", Arguments: map[string]string{"topic": "the gateway"}})
			require.NoError(t, err)
			require.Len(t, gp.Messages, 2)
			require.Equal(t, "review the gateway", gp.Messages[0].Content.(*sdk.TextContent).Text)
			require.Equal(t, "tollgate://github/file:///readme", gp.Messages[1].Content.(*sdk.ResourceLink).URI, "links point where the agent can read them")

			// keyRead: github/echo and fs/* — fs's resources and prompts only.
			rd, _ := connect(t, f, keyRead, "/mcp", v, false)
			rl, err = rd.ListResources(ctx, nil)
			require.NoError(t, err)
			require.Len(t, rl.Resources, 1)
			require.Equal(t, "tollgate://fs/file:///readme", rl.Resources[0].URI)
			_, err = rd.ReadResource(ctx, &sdk.ReadResourceParams{URI: "tollgate://github/file:///readme"})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
			require.ErrorContains(t, err, `key read has no mcp-tools grant matching "github/resource:*"`)
			pl, err = rd.ListPrompts(ctx, nil)
			require.NoError(t, err)
			require.Len(t, pl.Prompts, 1)
			require.Equal(t, "fs__review", pl.Prompts[0].Name)
			_, err = rd.GetPrompt(ctx, &sdk.GetPromptParams{Name: "github__review", Arguments: map[string]string{"topic": "x"}})
			require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
			require.ErrorContains(t, err, `"github/prompt:review"`)

			// One server: its own names and URIs.
			one, _ := connect(t, f, keyAll, "/mcp/github", v, false)
			rl, err = one.ListResources(ctx, nil)
			require.NoError(t, err)
			require.Len(t, rl.Resources, 1)
			require.Equal(t, "file:///readme", rl.Resources[0].URI)
			rr, err = one.ReadResource(ctx, &sdk.ReadResourceParams{URI: "file:///readme"})
			require.NoError(t, err)
			require.Equal(t, "file:///readme", rr.Contents[0].URI)
			gp, err = one.GetPrompt(ctx, &sdk.GetPromptParams{Name: "review", Arguments: map[string]string{"topic": "y"}})
			require.NoError(t, err)
			require.Equal(t, "file:///readme", gp.Messages[1].Content.(*sdk.ResourceLink).URI)
			require.Empty(t, f.acct.ledger, "resources and prompts are not metered")
		})
	}
}
