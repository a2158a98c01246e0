package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"mime/multipart"
	"net"
	"net/http"
	"strconv"
	"strings"
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

// mockCall does one request to a mock and decodes its JSON answer.
func mockCall(t *testing.T, method, url string, body io.Reader, headers ...string) map[string]any {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// A batch admitted by one gateway process, which then stops (its
// process-local reservation with it), is settled once by the next one on
// the same store: each line in the ledger at the batch price, equal to the
// provider's bill of those lines. A strict budget refuses a batch it
// cannot cover.
func TestBatchPendingAcrossARestartSettlesOnce(t *testing.T) {
	// The provider of the batch outlives both gateway processes.
	m := mockllm.New(mockllm.DefaultConfig())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(mctx, lis) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	base := "http://" + lis.Addr().String()

	var jsonl strings.Builder
	for i := range 3 {
		jsonl.WriteString(`{"custom_id":"c` + strconv.Itoa(i) + `","method":"POST","url":"/v1/chat/completions","body":{"model":"mock-gpt","max_tokens":` + strconv.Itoa(4+i) + `,"messages":[{"role":"user","content":"a prompt of some bytes"}]}}` + "\n")
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	require.NoError(t, mw.WriteField("purpose", "batch"))
	fw, err := mw.CreateFormFile("file", "in.jsonl")
	require.NoError(t, err)
	_, err = fw.Write([]byte(jsonl.String()))
	require.NoError(t, err)
	require.NoError(t, mw.Close())
	file := mockCall(t, http.MethodPost, base+"/v1/files", &body, "Content-Type", mw.FormDataContentType(), "Authorization", "Bearer sk-batch")
	created := mockCall(t, http.MethodPost, base+"/v1/batches", strings.NewReader(`{"input_file_id":"`+file["id"].(string)+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "Authorization", "Bearer sk-batch")
	batchID := created["id"].(string)

	st := memstore.New()
	price := kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar} // the mock's price of mock-gpt
	ctx := context.Background()
	t.Run("admitted before the restart", func(t *testing.T) {
		r := startWith(t, false, st, nil, func(c *gateway.Config, _ *gateway.Options) { c.BatchPollInterval = 0 })
		sealer, err := secret.NewSealer(make([]byte, 32))
		require.NoError(t, err)
		put(t, st, "batchp", &store.Provider{ID: "batchp", Type: store.ProviderOpenAI, BaseURL: base + "/v1", Credential: sealer.Seal([]byte("sk-batch"))})
		put(t, st, "bd", &store.Deployment{ID: "bd", Provider: "batchp", ProviderModel: "mock-gpt"})

		est, err := batch.EstimateOpenAI([]byte(jsonl.String()), "/v1/chat/completions")
		require.NoError(t, err)
		limits := kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar / 1000, Period: kernel.Period{Kind: kernel.PeriodDaily}}}, Shortfall: kernel.Reject}
		scopes := []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "kb"}, Limits: &limits}}
		dec, err := r.g.Accountant.Admit(ctx, est.AdmitRequest("res-"+batchID, scopes, price, 16, 26*time.Hour))
		require.NoError(t, err)
		require.True(t, dec.Admitted, "%+v", dec)

		huge := est
		huge.MaxTokens = 10_000_000
		dec, err = r.g.Accountant.Admit(ctx, huge.AdmitRequest("res-huge", scopes, price, 16, 26*time.Hour))
		require.NoError(t, err)
		require.False(t, dec.Admitted)
		require.Equal(t, kernel.ReasonBudgetExceeded, dec.Reason)

		require.NoError(t, batch.NewStore(st).Add(ctx, &batch.Pending{
			ID: batchID, API: batch.APIOpenAI, Provider: "batchp", Deployment: "bd", Model: "demo", KeyID: "kb",
			ReservationID: "res-" + batchID, Price: batch.Price(price), Lines: est.Lines, CreatedAt: time.Now().UTC(),
		}))
	})

	// The next process settles it (its poller ticks at start), once.
	r := startWith(t, false, st, nil)
	lines := func() []store.LedgerEntry {
		require.NoError(t, st.Flush(ctx))
		rows, err := st.Entries(ctx, store.LedgerFilter{Scope: &kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "kb"}, Limit: 100})
		require.NoError(t, err)
		return rows
	}
	eventually(t, func() bool { return len(lines()) == 3 })
	n, err := r.g.SettleBatchesNow(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to settle")
	pending, err := batch.NewStore(st).List(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)

	rows := lines()
	require.Len(t, rows, 3, "each line once")
	var total kernel.Money
	for _, e := range rows {
		require.True(t, strings.HasPrefix(e.RequestID, batchID+"/c"), e.RequestID)
		require.Equal(t, "demo", e.Model)
		require.Equal(t, kernel.Cost(batch.Price(price), e.Usage), e.Cost)
		require.Positive(t, e.Usage.Output)
		total += e.Cost
	}
	costs := mockCall(t, http.MethodGet, base+"/v1/organization/costs?start_time="+strconv.FormatInt(time.Now().UTC().Truncate(24*time.Hour).Unix(), 10), nil, "Authorization", "Bearer sk-admin-mock")
	billed := costs["data"].([]any)[0].(map[string]any)["results"].([]any)[0].(map[string]any)["amount"].(map[string]any)["value"].(float64)
	require.Equal(t, total, kernel.Money(math.Round(billed*1e9)), "the ledger is the provider's bill of the lines at the batch price")
}
