package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// batchMock is a mock provider whose batches take a minute to run, on a
// clock the test moves; it outlives the gateways of a test.
type batchMock struct {
	m    *mockllm.Server
	base string // http://host:port
	skew atomic.Int64
}

func startBatchMock(t *testing.T) *batchMock {
	t.Helper()
	cfg := mockllm.DefaultConfig()
	cfg.BatchDelay = time.Minute
	bm := &batchMock{m: mockllm.New(cfg)}
	bm.m.SetClock(func() time.Time { return time.Now().Add(time.Duration(bm.skew.Load())) })
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bm.m.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	bm.base = "http://" + lis.Addr().String()
	return bm
}

// finish runs every batch to its end (the mock's clock moves past the delay).
func (bm *batchMock) finish() { bm.skew.Add(int64(2 * time.Minute)) }

// configure adds the batch models served by the mock: gpt-batch (OpenAI,
// mock-gpt) and claude-batch (Anthropic, mock-claude), priced as the mock
// bills them.
func (bm *batchMock) configure(t *testing.T, st store.Store) {
	t.Helper()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, st, "bp", &store.Provider{ID: "bp", Type: store.ProviderOpenAI, BaseURL: bm.base + "/v1", Credential: sealer.Seal([]byte("sk-batch-openai"))})
	put(t, st, "ap", &store.Provider{ID: "ap", Type: store.ProviderAnthropic, BaseURL: bm.base + "/v1", Credential: sealer.Seal([]byte("sk-batch-anthropic"))})
	put(t, st, "bd", &store.Deployment{ID: "bd", Provider: "bp", ProviderModel: "mock-gpt"})
	put(t, st, "ad", &store.Deployment{ID: "ad", Provider: "ap", ProviderModel: "mock-claude"})
	put(t, st, "gpt-batch", &store.ModelGroup{ID: "gpt-batch", Deployments: []string{"bd"}})
	put(t, st, "claude-batch", &store.ModelGroup{ID: "claude-batch", Deployments: []string{"ad"}})
	for name, p := range mockllm.DefaultConfig().Prices {
		put(t, st, name, &store.ModelPrice{ID: name, Price: kernel.Price{Input: kernel.Money(p.Input), CachedInput: kernel.Money(p.CachedInput), CacheWrite: kernel.Money(p.CacheWrite), Output: kernel.Money(p.Output)}})
	}
	gp, cp := mockllm.DefaultConfig().Prices["mock-gpt"], mockllm.DefaultConfig().Prices["mock-claude"]
	put(t, st, "gpt-batch", &store.ModelPrice{ID: "gpt-batch", Price: kernel.Price{Input: kernel.Money(gp.Input), CachedInput: kernel.Money(gp.CachedInput), Output: kernel.Money(gp.Output)}})
	put(t, st, "claude-batch", &store.ModelPrice{ID: "claude-batch", Price: kernel.Price{Input: kernel.Money(cp.Input), CachedInput: kernel.Money(cp.CachedInput), CacheWrite: kernel.Money(cp.CacheWrite), Output: kernel.Money(cp.Output)}})
}

// call does one request to the gateway and returns its status and body.
func call(t *testing.T, method, url, key string, body io.Reader, contentType string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return out
}

// batchInput is a Batch API input file of n chat lines of model.
func batchInput(model string, n, maxTokens int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`{"custom_id":"c` + strconv.Itoa(i) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"` + model +
			`","max_tokens":` + strconv.Itoa(maxTokens) + `,"messages":[{"role":"user","content":"line ` + strconv.Itoa(i) + ` of a batch"}]}}` + "\n")
	}
	return b.String()
}

// upload posts a file with purpose batch.
func upload(t *testing.T, url, key, content string) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("purpose", "batch"))
	fw, err := mw.CreateFormFile("file", "in.jsonl")
	require.NoError(t, err)
	_, err = fw.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	return call(t, http.MethodPost, url+"/v1/files", key, &body, mw.FormDataContentType())
}

// requireOpenAIError checks an error in OpenAI's shape.
func requireOpenAIError(t *testing.T, status, want int, raw []byte, code string) {
	t.Helper()
	require.Equal(t, want, status, string(raw))
	e, ok := decode(t, raw)["error"].(map[string]any)
	require.True(t, ok, string(raw))
	require.NotEmpty(t, e["message"])
	require.Contains(t, e, "type")
	if code != "" {
		require.Equal(t, code, e["code"], string(raw))
	}
}

// requireLinesAtBatchPrice checks the ledger rows of a settled batch: one
// per line of the provider's output, each the provider's usage of the line
// at half the model's price.
func requireLinesAtBatchPrice(t *testing.T, st store.Store, keyID, batchID string, usage map[string]kernel.Usage, price mockllm.Price) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.Flush(ctx))
	rows, err := st.Entries(ctx, store.LedgerFilter{Scope: &kernel.ScopeRef{Kind: kernel.ScopeKey, ID: keyID}, Limit: 1000})
	require.NoError(t, err)
	got := map[string]store.LedgerEntry{}
	for _, e := range rows {
		if strings.HasPrefix(e.RequestID, batchID+"/") {
			_, dup := got[e.RequestID]
			require.False(t, dup, "line %s settled twice", e.RequestID)
			got[e.RequestID] = e
		}
	}
	require.Len(t, got, len(usage), "one ledger row per line")
	half := kernel.Price{Input: kernel.Money(price.Input) / 2, CachedInput: kernel.Money(price.CachedInput) / 2, CacheWrite: kernel.Money(price.CacheWrite) / 2, Output: kernel.Money(price.Output) / 2}
	for id, u := range usage {
		e, ok := got[batchID+"/"+id]
		require.True(t, ok, "line %s", id)
		require.Equal(t, u, e.Usage, "line %s: the provider's usage", id)
		require.Equal(t, kernel.Cost(half, u), e.Cost, "line %s: at the batch price", id)
		require.Positive(t, e.Cost)
	}
}

// openAIOutputUsage reads an output file's per-line usage.
func openAIOutputUsage(t *testing.T, content []byte) map[string]kernel.Usage {
	t.Helper()
	lines, err := batch.ParseOpenAIOutput(bytes.NewReader(content))
	require.NoError(t, err)
	out := map[string]kernel.Usage{}
	for _, l := range lines {
		out[l.CustomID] = l.Usage
	}
	return out
}

// TestBatchEndpoints is #35's batch endpoints on the built-in data plane:
// OpenAI's files and batches and Anthropic's message batches routed to the
// provider serving the batch's model; files and batches are their key's
// (another key gets 404 in the client's shape); a strict budget refuses a
// batch whose worst case it cannot cover before the provider sees it; an
// ended batch is settled once per line at the batch price.
func TestBatchEndpoints(t *testing.T) {
	bm := startBatchMock(t)
	st := memstore.New()
	r := startWith(t, false, st, nil, func(c *gateway.Config, _ *gateway.Options) { c.BatchPollInterval = 0 })
	bm.configure(t, st)
	strict := kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar / 1000, Period: kernel.Period{Kind: kernel.PeriodDaily}}}, Shortfall: kernel.Reject}
	tight := r.key(t, "k-strict", strict)
	other := r.key(t, "k-other", kernel.Limits{})
	owner := r.key(t, "k-owner", kernel.Limits{})
	eventually(t, func() bool {
		s, _ := call(t, http.MethodGet, r.url+"/v1/files", owner, nil, "")
		return s == http.StatusOK
	})

	// Upload: the lines reach the provider with the deployment's model.
	status, raw := upload(t, r.url, owner, batchInput("gpt-batch", 3, 8))
	require.Equal(t, http.StatusOK, status, string(raw))
	file := decode(t, raw)
	fileID := file["id"].(string)
	require.Equal(t, "batch", file["purpose"])
	status, raw = call(t, http.MethodGet, r.url+"/v1/files/"+fileID+"/content", owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(raw))
	require.Contains(t, string(raw), `"model":"mock-gpt"`)
	require.NotContains(t, string(raw), "gpt-batch")
	status, raw = call(t, http.MethodGet, r.url+"/v1/files", owner, nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, decode(t, raw)["data"], 1)

	// Bad uploads.
	status, raw = upload(t, r.url, owner, `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-batch"}}`+"\n"+`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-batch"}}`)
	requireOpenAIError(t, status, http.StatusBadRequest, raw, "")
	require.Contains(t, string(raw), "line 2")
	status, raw = upload(t, r.url, owner, batchInput("no-such-model", 1, 8))
	requireOpenAIError(t, status, http.StatusNotFound, raw, "model_not_found")

	// Another key: 404 on read, use and delete, and not in its list.
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/files/" + fileID, ""},
		{http.MethodGet, "/v1/files/" + fileID + "/content", ""},
		{http.MethodDelete, "/v1/files/" + fileID, ""},
		{http.MethodPost, "/v1/batches", `{"input_file_id":"` + fileID + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`},
	} {
		status, raw := call(t, c.method, r.url+c.path, other, strings.NewReader(c.body), "application/json")
		requireOpenAIError(t, status, http.StatusNotFound, raw, "")
		require.Contains(t, string(raw), "No such File object: "+fileID)
	}
	status, raw = call(t, http.MethodGet, r.url+"/v1/files", other, nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, decode(t, raw)["data"])
	status, raw = call(t, http.MethodGet, r.url+"/v1/files", "tg-not-a-key", nil, "")
	requireOpenAIError(t, status, http.StatusUnauthorized, raw, "invalid_api_key")

	// A strict budget refuses a batch whose worst case it cannot cover,
	// before the provider sees it.
	status, raw = upload(t, r.url, tight, batchInput("gpt-batch", 3, 100_000))
	require.Equal(t, http.StatusOK, status, string(raw))
	bigID := decode(t, raw)["id"].(string)
	status, raw = call(t, http.MethodPost, r.url+"/v1/batches", tight, strings.NewReader(`{"input_file_id":"`+bigID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "application/json")
	requireOpenAIError(t, status, http.StatusBadRequest, raw, "budget_exceeded")
	require.Equal(t, "budget_exceeded", decode(t, raw)["error"].(map[string]any)["type"])
	status, raw = call(t, http.MethodGet, r.url+"/v1/batches", tight, nil, "")
	require.Equal(t, http.StatusOK, status)
	require.Empty(t, decode(t, raw)["data"])

	// Create: admitted, pending, the key's.
	status, raw = call(t, http.MethodPost, r.url+"/v1/batches", owner, strings.NewReader(`{"input_file_id":"`+fileID+`","endpoint":"/v1/embeddings","completion_window":"24h"}`), "application/json")
	requireOpenAIError(t, status, http.StatusBadRequest, raw, "")
	status, raw = call(t, http.MethodPost, r.url+"/v1/batches", owner, strings.NewReader(`{"input_file_id":"`+fileID+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "application/json")
	require.Equal(t, http.StatusOK, status, string(raw))
	created := decode(t, raw)
	batchID := created["id"].(string)
	require.Equal(t, "in_progress", created["status"])
	pending, err := batch.NewStore(st).List(context.Background())
	require.NoError(t, err)
	require.Len(t, pending, 1)
	require.Equal(t, "k-owner", pending[0].KeyID)
	require.Positive(t, pending[0].Reserved)
	for _, c := range []struct{ method, path string }{{http.MethodGet, "/v1/batches/" + batchID}, {http.MethodPost, "/v1/batches/" + batchID + "/cancel"}} {
		status, raw := call(t, c.method, r.url+c.path, other, nil, "")
		requireOpenAIError(t, status, http.StatusNotFound, raw, "")
	}
	n, err := r.g.SettleBatchesNow(context.Background())
	require.NoError(t, err)
	require.Zero(t, n, "the batch runs on")

	// It ends: the output file is the key's; settled once per line.
	bm.finish()
	status, raw = call(t, http.MethodGet, r.url+"/v1/batches", owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(raw))
	list := decode(t, raw)["data"].([]any)
	require.Len(t, list, 1)
	done := list[0].(map[string]any)
	require.Equal(t, "completed", done["status"])
	outID := done["output_file_id"].(string)
	status, raw = call(t, http.MethodGet, r.url+"/v1/files/"+outID+"/content", other, nil, "")
	requireOpenAIError(t, status, http.StatusNotFound, raw, "")
	status, output := call(t, http.MethodGet, r.url+"/v1/files/"+outID+"/content", owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(output))
	status, raw = call(t, http.MethodDelete, r.url+"/v1/files/"+outID, owner, nil, "")
	requireOpenAIError(t, status, http.StatusConflict, raw, "")

	n, err = r.g.SettleBatchesNow(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = r.g.SettleBatchesNow(context.Background())
	require.NoError(t, err)
	require.Zero(t, n)
	usage := openAIOutputUsage(t, output)
	require.Len(t, usage, 3)
	requireLinesAtBatchPrice(t, st, "k-owner", batchID, usage, mockllm.DefaultConfig().Prices["mock-gpt"])

	status, raw = call(t, http.MethodDelete, r.url+"/v1/files/"+fileID, owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(raw))
	status, _ = call(t, http.MethodGet, r.url+"/v1/files/"+fileID, owner, nil, "")
	require.Equal(t, http.StatusNotFound, status)

	// Cancelled after its first line ran: that line is settled, the rest
	// cost nothing.
	t.Run("cancel settles what ran", func(t *testing.T) {
		status, raw := upload(t, r.url, owner, batchInput("gpt-batch", 3, 8))
		require.Equal(t, http.StatusOK, status, string(raw))
		status, raw = call(t, http.MethodPost, r.url+"/v1/batches", owner, strings.NewReader(`{"input_file_id":"`+decode(t, raw)["id"].(string)+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "application/json")
		require.Equal(t, http.StatusOK, status, string(raw))
		id := decode(t, raw)["id"].(string)
		bm.skew.Add(int64(25 * time.Second)) // line 0 of 3 completes at 20 s of 60
		status, raw = call(t, http.MethodPost, r.url+"/v1/batches/"+id+"/cancel", owner, nil, "")
		require.Equal(t, http.StatusOK, status, string(raw))
		require.Equal(t, "cancelled", decode(t, raw)["status"])
		n, err := r.g.SettleBatchesNow(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		status, raw = call(t, http.MethodGet, r.url+"/v1/batches/"+id, owner, nil, "")
		require.Equal(t, http.StatusOK, status, string(raw))
		status, output := call(t, http.MethodGet, r.url+"/v1/files/"+decode(t, raw)["output_file_id"].(string)+"/content", owner, nil, "")
		require.Equal(t, http.StatusOK, status, string(output))
		usage := openAIOutputUsage(t, output)
		require.Len(t, usage, 1, "one line ran")
		requireLinesAtBatchPrice(t, st, "k-owner", id, usage, mockllm.DefaultConfig().Prices["mock-gpt"])
	})

	// On Envoy, the batch routes go to the gateway's service listener (the
	// cluster of /mcp too): the same endpoints, the same owners.
	t.Run("the service Envoy's batch routes reach", func(t *testing.T) {
		svc := "http://" + r.g.MCPAddr
		status, raw := call(t, http.MethodGet, svc+"/v1/batches/"+batchID, owner, nil, "")
		require.Equal(t, http.StatusOK, status, string(raw))
		require.Equal(t, batchID, decode(t, raw)["id"])
		status, raw = call(t, http.MethodGet, svc+"/v1/batches/"+batchID, other, nil, "")
		requireOpenAIError(t, status, http.StatusNotFound, raw, "")
		status, raw = upload(t, svc, other, batchInput("gpt-batch", 1, 8))
		require.Equal(t, http.StatusOK, status, string(raw))
		status, raw = call(t, http.MethodGet, svc+"/v1/files", other, nil, "")
		require.Equal(t, http.StatusOK, status, string(raw))
		require.Len(t, decode(t, raw)["data"], 1)
		status, _ = call(t, http.MethodPost, svc+"/mcp", other, strings.NewReader(`{}`), "application/json")
		require.NotEqual(t, http.StatusNotFound, status, "/mcp is still the MCP gateway's")
	})

	t.Run("anthropic", func(t *testing.T) {
		anth := func(method, path, key, body string) (int, []byte) {
			req, err := http.NewRequest(method, r.url+path, strings.NewReader(body))
			require.NoError(t, err)
			req.Header.Set("X-Api-Key", key)
			req.Header.Set("Anthropic-Version", "2023-06-01")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			return resp.StatusCode, raw
		}
		body := `{"requests":[` +
			`{"custom_id":"a","params":{"model":"claude-batch","max_tokens":16,"messages":[{"role":"user","content":"first"}]}},` +
			`{"custom_id":"b","params":{"model":"claude-batch","max_tokens":16,"messages":[{"role":"user","content":"second line"}]}}]}`
		status, raw := anth(http.MethodPost, "/v1/messages/batches", tight, strings.Replace(body, `"max_tokens":16`, `"max_tokens":100000`, 1))
		require.Equal(t, http.StatusBadRequest, status, string(raw))
		require.Equal(t, "invalid_request_error", decode(t, raw)["error"].(map[string]any)["type"])
		require.Contains(t, string(raw), "Budget exceeded")

		status, raw = anth(http.MethodPost, "/v1/messages/batches", owner, body)
		require.Equal(t, http.StatusOK, status, string(raw))
		mb := decode(t, raw)
		id := mb["id"].(string)
		require.Equal(t, "in_progress", mb["processing_status"])
		status, raw = anth(http.MethodGet, "/v1/messages/batches/"+id, other, "")
		require.Equal(t, http.StatusNotFound, status)
		require.Equal(t, "not_found_error", decode(t, raw)["error"].(map[string]any)["type"])
		status, _ = anth(http.MethodGet, "/v1/messages/batches/"+id+"/results", other, "")
		require.Equal(t, http.StatusNotFound, status)

		bm.finish()
		status, raw = anth(http.MethodGet, "/v1/messages/batches/"+id, owner, "")
		require.Equal(t, http.StatusOK, status, string(raw))
		mb = decode(t, raw)
		require.Equal(t, "ended", mb["processing_status"])
		require.Equal(t, r.url+"/v1/messages/batches/"+id+"/results", mb["results_url"], "the results are read through the gateway")
		status, results := anth(http.MethodGet, "/v1/messages/batches/"+id+"/results", owner, "")
		require.Equal(t, http.StatusOK, status, string(results))
		lines, err := batch.ParseAnthropicResults(bytes.NewReader(results))
		require.NoError(t, err)
		usage := map[string]kernel.Usage{}
		for _, l := range lines {
			usage[l.CustomID] = l.Usage
		}
		require.Len(t, usage, 2)
		status, raw = anth(http.MethodDelete, "/v1/messages/batches/"+id, owner, "")
		require.Equal(t, http.StatusConflict, status, "not settled yet: %s", raw)

		n, err := r.g.SettleBatchesNow(context.Background())
		require.NoError(t, err)
		require.Equal(t, 1, n)
		requireLinesAtBatchPrice(t, st, "k-owner", id, usage, mockllm.DefaultConfig().Prices["mock-claude"])

		status, raw = anth(http.MethodGet, "/v1/messages/batches", owner, "")
		require.Equal(t, http.StatusOK, status, string(raw))
		require.Len(t, decode(t, raw)["data"], 1)
		status, raw = anth(http.MethodDelete, "/v1/messages/batches/"+id, owner, "")
		require.Equal(t, http.StatusOK, status, string(raw))
		status, _ = anth(http.MethodGet, "/v1/messages/batches/"+id, owner, "")
		require.Equal(t, http.StatusNotFound, status)
	})
}
