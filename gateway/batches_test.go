package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// A batch created through the endpoints of one gateway process, which then
// stops (its process-local reservation with it) while the batch runs, is
// settled once by the next process on the same store after the provider
// completes it: each line in the ledger exactly once, at the batch price,
// equal to the provider's bill of the line (its usage at half the price).
func TestBatchPendingAcrossARestartSettlesOnce(t *testing.T) {
	bm := startBatchMock(t) // the provider outlives both processes
	st := memstore.New()
	ctx := context.Background()
	var owner, batchID string
	t.Run("created before the restart", func(t *testing.T) {
		r := startWith(t, false, st, nil, func(c *gateway.Config, _ *gateway.Options) { c.BatchPollInterval = 0 })
		bm.configure(t, st)
		owner = r.key(t, "kb", kernel.Limits{})
		eventually(t, func() bool {
			s, _ := call(t, http.MethodGet, r.url+"/v1/files", owner, nil, "")
			return s == http.StatusOK
		})
		status, raw := upload(t, r.url, owner, batchInput("gpt-batch", 3, 8))
		require.Equal(t, http.StatusOK, status, string(raw))
		status, raw = call(t, http.MethodPost, r.url+"/v1/batches", owner,
			strings.NewReader(`{"input_file_id":"`+decode(t, raw)["id"].(string)+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "application/json")
		require.Equal(t, http.StatusOK, status, string(raw))
		batchID = decode(t, raw)["id"].(string)
		pending, err := batch.NewStore(st).List(ctx)
		require.NoError(t, err)
		require.Len(t, pending, 1)
	}) // the first process stops here

	bm.finish() // the provider completes the batch while no gateway runs

	// The next process settles it (its poller ticks at start), once.
	r := startWith(t, false, st, nil)
	lines := func() int {
		require.NoError(t, st.Flush(ctx))
		rows, err := st.Entries(ctx, store.LedgerFilter{Scope: &kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "kb"}, Limit: 100})
		require.NoError(t, err)
		return len(rows)
	}
	eventually(t, func() bool { return lines() == 3 })
	n, err := r.g.SettleBatchesNow(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to settle")
	pending, err := batch.NewStore(st).List(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)

	status, raw := call(t, http.MethodGet, r.url+"/v1/batches/"+batchID, owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(raw))
	status, output := call(t, http.MethodGet, r.url+"/v1/files/"+decode(t, raw)["output_file_id"].(string)+"/content", owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(output))
	requireLinesAtBatchPrice(t, st, "kb", batchID, openAIOutputUsage(t, output), mockllm.DefaultConfig().Prices["mock-gpt"])
	require.Equal(t, 3, lines(), "each line once")
}

// TestAzureBatch (issue 35): a model group on an Azure OpenAI resource
// serves OpenAI's Files and Batch APIs through the gateway — the file and
// the batch reach the resource's v1 API with its api-key — and the batch is
// settled, each line once at the batch price.
func TestAzureBatch(t *testing.T) {
	bm := startBatchMock(t)
	st := memstore.New()
	ctx := context.Background()
	r := startWith(t, false, st, nil, func(c *gateway.Config, _ *gateway.Options) { c.BatchPollInterval = 0 })
	bm.configure(t, st)
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, st, "zp", &store.Provider{ID: "zp", Type: store.ProviderAzure, BaseURL: bm.base, Credential: sealer.Seal([]byte("az-batch"))})
	put(t, st, "zd", &store.Deployment{ID: "zd", Provider: "zp", ProviderModel: "mock-gpt"})
	put(t, st, "azure-batch", &store.ModelGroup{ID: "azure-batch", Deployments: []string{"zd"}})
	gp := mockllm.DefaultConfig().Prices["mock-gpt"]
	put(t, st, "azure-batch", &store.ModelPrice{ID: "azure-batch", Price: kernel.Price{Input: kernel.Money(gp.Input), CachedInput: kernel.Money(gp.CachedInput), Output: kernel.Money(gp.Output)}})
	owner := r.key(t, "kz", kernel.Limits{})
	eventually(t, func() bool {
		s, _ := call(t, http.MethodGet, r.url+"/v1/files", owner, nil, "")
		return s == http.StatusOK
	})
	status, raw := upload(t, r.url, owner, batchInput("azure-batch", 2, 8))
	require.Equal(t, http.StatusOK, status, string(raw))
	status, raw = call(t, http.MethodPost, r.url+"/v1/batches", owner,
		strings.NewReader(`{"input_file_id":"`+decode(t, raw)["id"].(string)+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "application/json")
	require.Equal(t, http.StatusOK, status, string(raw))
	batchID := decode(t, raw)["id"].(string)

	bm.finish()
	n, err := r.g.SettleBatchesNow(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Contains(t, bm.m.Stats().Keys, "az-batch", "billed to the resource's key, sent in api-key")
	status, raw = call(t, http.MethodGet, r.url+"/v1/batches/"+batchID, owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(raw))
	status, output := call(t, http.MethodGet, r.url+"/v1/files/"+decode(t, raw)["output_file_id"].(string)+"/content", owner, nil, "")
	require.Equal(t, http.StatusOK, status, string(output))
	requireLinesAtBatchPrice(t, st, "kz", batchID, openAIOutputUsage(t, output), gp)
}
