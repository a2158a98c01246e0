package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// reconcileClient is the admin API's ReconcileService of a running gateway,
// with the test's admin key.
func reconcileClient(t *testing.T, r *running) (adminv1.ReconcileServiceClient, context.Context) {
	t.Helper()
	conn, err := grpc.NewClient(r.g.AdminAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer tga-test-admin-secret")
	return adminv1.NewReconcileServiceClient(conn), ctx
}

// direct sends a request straight to the mock provider, past the gateway,
// and returns the reply's usage.
func direct(t *testing.T, r *running, path, key, body string) (input, output int64) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.mockURL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	var out struct {
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(b, &out))
	return out.Usage.Prompt, out.Usage.Completion
}

func TestReconcileAfterAMixedWorkload(t *testing.T) {
	r := startWith(t, false, memstore.New(), nil, func(c *gateway.Config, _ *gateway.Options) {
		c.Reconcile.Interval = time.Hour // the first run is at start: recorded below
	})
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	// The mock bills mock-gpt $1/$2 and mock-claude $3/$15 per million
	// tokens, mock-embedding $0.10 (mockllm.DefaultConfig): the gateway's
	// prices are the same, so an exact ledger drifts by nothing.
	put(t, r.st, "mock", &store.Provider{
		ID: "mock", Type: store.ProviderOpenAI, BaseURL: r.mockURL + "/v1",
		Credential: sealer.Seal([]byte("sk-upstream")), AdminCredential: sealer.Seal([]byte("sk-admin-mock")),
	})
	put(t, r.st, "emb-1", &store.Deployment{ID: "emb-1", Provider: "mock", ProviderModel: "mock-embedding"})
	put(t, r.st, "emb", &store.ModelGroup{ID: "emb", Deployments: []string{"emb-1"}})
	put(t, r.st, "emb", &store.ModelPrice{ID: "emb", Price: kernel.Price{Input: kernel.Dollar / 10}})
	put(t, r.st, "ant", &store.Provider{
		ID: "ant", Type: store.ProviderAnthropic, BaseURL: r.mockURL + "/v1",
		Credential: sealer.Seal([]byte("sk-ant-upstream")), AdminCredential: sealer.Seal([]byte("sk-admin-mock")),
	})
	put(t, r.st, "ant-1", &store.Deployment{ID: "ant-1", Provider: "ant", ProviderModel: "mock-claude"})
	put(t, r.st, "claude", &store.ModelGroup{ID: "claude", Deployments: []string{"ant-1"}})
	put(t, r.st, "claude", &store.ModelPrice{ID: "claude", Price: kernel.Price{Input: 3 * kernel.Dollar, Output: 15 * kernel.Dollar}})

	key := r.key(t, "k1", kernel.Limits{})
	r.warm(t, key, `{"model":"claude","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	for _, req := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"hello there gateway"}],"max_tokens":5}`},
		{"/v1/chat/completions", `{"model":"demo","stream":true,"messages":[{"role":"user","content":"a streamed one"}],"max_tokens":7}`},
		{"/v1/embeddings", `{"model":"emb","input":["one input","and another"]}`},
		{"/v1/messages", `{"model":"claude","max_tokens":6,"messages":[{"role":"user","content":"hello claude"}]}`},
		{"/v1/messages", `{"model":"claude","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"stream it"}]}`},
		{"/v1/chat/completions", `{"model":"claude","messages":[{"role":"user","content":"translated to messages"}],"max_tokens":4}`},
	} {
		resp, b := r.post(t, key, req.path, req.body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s", req.path, b)
	}
	require.NoError(t, r.st.Flush(context.Background()))

	client, ctx := reconcileClient(t, r)
	today := time.Now().UTC().Format(time.DateOnly)
	reconcileToday := func(provider string) *adminv1.ReconcileReport {
		resp, err := client.Reconcile(ctx, &adminv1.ReconcileRequest{Provider: provider, From: today, To: today})
		require.NoError(t, err)
		return resp.GetReport()
	}
	cells := func(rep *adminv1.ReconcileReport) map[string]*adminv1.ReconcileCell {
		out := map[string]*adminv1.ReconcileCell{}
		for _, c := range rep.GetCells() {
			require.Equal(t, today, c.GetDay())
			out[c.GetModel()] = c
		}
		return out
	}
	zero := func(t *testing.T, c *adminv1.ReconcileCell) {
		t.Helper()
		d := c.GetDrift()
		require.Zero(t, d.GetTokens(), "%v", c)
		require.Zero(t, d.GetRequests(), "%v", c)
		require.Zero(t, d.GetCost().GetNanoUsd(), "%v", c)
		require.Positive(t, c.GetLedger().GetCost().GetNanoUsd(), "%v", c)
		require.NotEmpty(t, c.GetRequestIds())
	}

	// Zero drift: every cell of both providers.
	openai := cells(reconcileToday("mock"))
	require.Len(t, openai, 2)
	zero(t, openai["mock-gpt"])
	zero(t, openai["mock-embedding"])
	require.Equal(t, []string{"demo"}, openai["mock-gpt"].GetPublicModels())
	require.Equal(t, int64(3), openai["mock-gpt"].GetLedger().GetRequests(), "the warm-up and two chats")
	ant := cells(reconcileToday("ant"))
	require.Len(t, ant, 1)
	zero(t, ant["mock-claude"])
	require.Len(t, ant["mock-claude"].GetRequestIds(), 4, "the warm-up, two messages and one translated chat")

	// A request that bypassed the gateway, on the gateway's own upstream
	// key: found in (today, mock-gpt), with its size; the other cells stay.
	in, out := direct(t, r, "/v1/chat/completions", "sk-upstream", `{"model":"mock-gpt","messages":[{"role":"user","content":"straight to the provider"}],"max_tokens":8}`)
	rep := reconcileToday("mock")
	openai = cells(rep)
	zero(t, openai["mock-embedding"])
	d := openai["mock-gpt"].GetDrift()
	require.Equal(t, in+out, d.GetTokens())
	require.Equal(t, int64(1), d.GetRequests())
	require.Equal(t, int64(kernel.Cost(kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}, kernel.Usage{Input: in, Output: out})), d.GetCost().GetNanoUsd())
	require.InDelta(t, 0.25, d.GetRequestsRel(), 1e-9, "one request in four")
	require.Equal(t, d.GetCost().GetNanoUsd(), rep.GetDrift().GetCost().GetNanoUsd())
	require.Zero(t, cells(reconcileToday("ant"))["mock-claude"].GetDrift().GetTokens())

	// A scheduled run (reconciling yesterday: no cells) is recorded for
	// both providers; the first one, at start, had none to reconcile.
	require.Zero(t, r.g.ReconcileNow(context.Background()))
	runs, err := client.ListReconcileRuns(ctx, &adminv1.ListReconcileRunsRequest{})
	require.NoError(t, err)
	var providers []string
	for _, run := range runs.GetRuns() {
		require.Empty(t, run.GetError())
		providers = append(providers, run.GetProvider())
	}
	require.ElementsMatch(t, []string{"mock", "ant"}, providers)
}

func TestReconcileRefusesWhatItCannotDo(t *testing.T) {
	r := start(t, false)
	client, ctx := reconcileClient(t, r)
	_, err := client.Reconcile(ctx, &adminv1.ReconcileRequest{Provider: "mock", From: "2026-12-01"})
	require.ErrorContains(t, err, "no admin credential")
	_, err = client.Reconcile(ctx, &adminv1.ReconcileRequest{Provider: "mock", From: "yesterday"})
	require.ErrorContains(t, err, "not a day")
	_, err = client.Reconcile(ctx, &adminv1.ReconcileRequest{Provider: "mock", From: "2026-12-05", To: "2026-12-01"})
	require.ErrorContains(t, err, "to must be after from")
	_, err = client.Reconcile(ctx, &adminv1.ReconcileRequest{Provider: "nope", From: "2026-12-01"})
	require.ErrorContains(t, err, "not found")
}
