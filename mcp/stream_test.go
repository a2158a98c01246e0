package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/mcp"
)

// chatty is an upstream that keeps sessions (as the conformance server in
// stateful mode) and talks during its calls: log messages and progress,
// and requests of its own to the agent (elicitation, sampling).
type chatty struct {
	*httptest.Server
	srv        *sdk.Server
	mu         sync.Mutex
	subscribed []string
}

func newChatty(t *testing.T) *chatty {
	t.Helper()
	c := &chatty{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "chatty", Version: "1"}, &sdk.ServerOptions{
		SubscribeHandler: func(_ context.Context, req *sdk.SubscribeRequest) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.subscribed = append(c.subscribed, "+"+req.Params.URI)
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, req *sdk.UnsubscribeRequest) error {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.subscribed = append(c.subscribed, "-"+req.Params.URI)
			return nil
		},
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "work"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		for i := range 3 {
			_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: fmt.Sprint("step ", i)})
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3})
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "ask"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		el, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "your name?", RequestedSchema: &jsonschema.Schema{
			Type: "object", Properties: map[string]*jsonschema.Schema{"name": {Type: "string"}},
		}})
		if err != nil {
			return nil, nil, err
		}
		cm, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10, Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "hi"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{
			Text: fmt.Sprintf("%s %v / %s", el.Action, el.Content["name"], cm.Content.(*sdk.TextContent).Text),
		}}}, nil, nil
	})
	srv.AddResource(&sdk.Resource{Name: "watched", URI: "test://watched"}, func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "w"}}}, nil
	})
	c.srv = srv
	c.Server = httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(c.Close)
	return c
}

// agent is what a 2025-11-25 agent heard besides its results.
type agent struct {
	mu       sync.Mutex
	logs     []string
	progress []float64
	tokens   []any
}

func connectAgent(t *testing.T, f *fixture, path string) (*sdk.ClientSession, *agent, *keyTransport) {
	t.Helper()
	a := &agent{}
	kt := &keyTransport{key: keyAll}
	for _, g := range f.gateways {
		kt.targets = append(kt.targets, g.URL)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.logs = append(a.logs, fmt.Sprint(req.Params.Data))
		},
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.progress = append(a.progress, req.Params.Progress)
			a.tokens = append(a.tokens, req.Params.ProgressToken)
		},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada (" + req.Params.Message + ")"}}, nil
		},
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "sampled"}}, nil
		},
	})
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: f.gateways[0].URL + path, HTTPClient: &http.Client{Transport: kt}, DisableStandaloneSSE: true,
	}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, a, kt
}

func chattyFixture(t *testing.T) (*fixture, *chatty) {
	t.Helper()
	f := newFixture(t, false)
	up := newChatty(t)
	f.cat.servers = append(f.cat.servers, &mcp.Server{ID: "chatty", URL: up.URL, PricePerCall: kernel.Cent})
	return f, up
}

// During a call, the upstream's log messages and progress reach a
// 2025-11-25 agent on an SSE reply, in order and before the result, after
// the agent's logging/setLevel reached the upstream; the call is metered
// once, on its result.
func TestCallRelaysLogsAndProgress(t *testing.T) {
	f, _ := chattyFixture(t)
	for _, path := range []string{"/mcp/chatty", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			before := len(f.acct.ledger)
			cs, a, _ := connectAgent(t, f, path)
			require.NoError(t, cs.SetLoggingLevel(t.Context(), &sdk.SetLoggingLevelParams{Level: "debug"}))
			name := "work"
			if path == "/mcp" {
				name = "chatty__work"
			}
			p := &sdk.CallToolParams{Name: name}
			p.SetProgressToken(7)
			r, err := cs.CallTool(t.Context(), p)
			require.NoError(t, err)
			require.Equal(t, "done", text(t, r))
			// The SDK's client hands notifications to its handlers
			// asynchronously.
			require.Eventually(t, func() bool {
				a.mu.Lock()
				defer a.mu.Unlock()
				return len(a.logs) == 3 && len(a.progress) == 3
			}, 5*time.Second, 10*time.Millisecond)
			a.mu.Lock()
			defer a.mu.Unlock()
			require.Equal(t, []string{"step 0", "step 1", "step 2"}, a.logs)
			require.Equal(t, []float64{0, 1, 2}, a.progress)
			tok := float64(7)
			require.Equal(t, []any{tok, tok, tok}, a.tokens, "the agent's own progress token")
			require.Len(t, f.acct.ledger, before+1, "one settlement, on the result")
			row := f.acct.ledger[len(f.acct.ledger)-1]
			require.True(t, row.Ran)
			require.Equal(t, "work", row.Tool)
			_, reserved := f.acct.st.Usage(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "all"}, kernel.Period{}, time.Now())
			require.Zero(t, reserved)
		})
	}
}

// The upstream's requests during a call (elicitation, sampling) reach the
// agent on the call's SSE reply; the agent's answers, later POSTs that land
// on either replica, reach the upstream session that asked.
func TestCallRelaysServerRequests(t *testing.T) {
	f, _ := chattyFixture(t)
	cs, _, kt := connectAgent(t, f, "/mcp/chatty")
	for i := range 3 {
		r, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "ask"})
		require.NoError(t, err, "call %d", i)
		require.Equal(t, "accept Ada (your name?) / sampled", text(t, r))
	}
	n := 0
	kt.seen.Range(func(any, any) bool { n++; return true })
	require.Equal(t, 2, n, "both replicas served the session")
	require.Len(t, f.acct.ledger, 3)

	// An answer whose id the gateway did not relay (sealed) is refused.
	require.Equal(t, http.StatusBadRequest, postInSession(t, f.gateways[0].URL+"/mcp/chatty", keyAll, cs.ID(), `{"jsonrpc":"2.0","id":"tgr1.AAAA","result":{}}`))
}

// resources/subscribe and unsubscribe reach the resource's server, in the
// agent's own upstream session, under the grant of its resources.
func TestSubscribeRelayed(t *testing.T) {
	f, up := chattyFixture(t)
	cs, _, _ := connectAgent(t, f, "/mcp")
	require.True(t, cs.InitializeResult().Capabilities.Resources.Subscribe)
	require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: "tollgate://chatty/test://watched"}))
	require.NoError(t, cs.Unsubscribe(t.Context(), &sdk.UnsubscribeParams{URI: "tollgate://chatty/test://watched"}))
	up.mu.Lock()
	require.Equal(t, []string{"+test://watched", "-test://watched"}, up.subscribed)
	up.mu.Unlock()

	err := cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: "tollgate://github/file:///readme"})
	require.Error(t, err, "github offers no subscriptions")

	rd, _ := connect(t, f, keyRead, "/mcp", "2025-11-25", false)
	err = rd.Subscribe(t.Context(), &sdk.SubscribeParams{URI: "tollgate://chatty/test://watched"})
	require.Equal(t, int64(mcp.CodeToolNotGranted), rpcCode(t, err))
}

// A 2025-11-25 agent's server stream (GET) carries what its upstream
// sessions send outside calls: the updates of the resources it subscribed
// to, under the URIs of the endpoint (tollgate://SERVER/URI on /mcp).
func TestServerStreamRelaysResourceUpdates(t *testing.T) {
	f, up := chattyFixture(t)
	updated := make(chan string, 16)
	// Requests alternate between the replicas: the GET stream and the
	// subscription need not be on the same one.
	kt := &keyTransport{key: keyAll, targets: []string{f.gateways[0].URL, f.gateways[1].URL}}
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{
		Endpoint: f.gateways[0].URL + "/mcp", HTTPClient: &http.Client{Transport: kt},
	}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	require.NoError(t, cs.Subscribe(t.Context(), &sdk.SubscribeParams{URI: "tollgate://chatty/test://watched"}))

	deadline := time.After(10 * time.Second)
	for {
		require.NoError(t, up.srv.ResourceUpdated(t.Context(), &sdk.ResourceUpdatedNotificationParams{URI: "test://watched"}))
		select {
		case uri := <-updated:
			require.Equal(t, "tollgate://chatty/test://watched", uri)
			return
		case <-time.After(100 * time.Millisecond): // the GET stream may not be open yet
		case <-deadline:
			t.Fatal("no notifications/resources/updated reached the agent")
		}
	}
}
