package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/reconcile"
	"github.com/tollgate-ai/tollgate/store"
)

// mock serves a mock provider on a loopback port.
func mock(t *testing.T) (*mockllm.Server, string) {
	t.Helper()
	srv := mockllm.New(mockllm.DefaultConfig())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return srv, "http://" + lis.Addr().String()
}

// ledger is an in-memory Ledger over rows.
type ledger []store.LedgerEntry

func (l ledger) Entries(_ context.Context, f store.LedgerFilter) ([]store.LedgerEntry, error) {
	var out []store.LedgerEntry
	past := f.After == ""
	for _, e := range l {
		if !past {
			past = e.RequestID == f.After
			continue
		}
		if e.EndedAt.Before(f.Since) || !e.EndedAt.Before(f.Until) {
			continue
		}
		out = append(out, e)
		if len(out) == f.Limit {
			break
		}
	}
	return out, nil
}

// call sends one request straight to the mock and returns the ledger row the
// gateway would have written for it (usage as the reply says, priced as the
// mock prices it).
func call(t *testing.T, base, path, key, body string, price kernel.Price, id int) store.LedgerEntry {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	u := kernel.Usage{Input: out.Usage.Prompt + out.Usage.Input, Output: out.Usage.Completion + out.Usage.Output}
	now := time.Now().UTC()
	return store.LedgerEntry{
		RequestID: "req-" + strconv.Itoa(id), Model: "public", Deployment: "d1", Usage: u,
		Cost: kernel.Cost(price, u), HTTPStatus: 200, StartedAt: now, EndedAt: now,
	}
}

func TestReconcileFindsTheDiscrepancyInItsCell(t *testing.T) {
	for _, tc := range []struct {
		name     string
		typ      store.ProviderType
		path     string
		model    string
		body     string
		price    kernel.Price
		requests bool
	}{
		{
			"openai", store.ProviderOpenAI, "/v1/chat/completions", "mock-gpt",
			`{"model":"mock-gpt","max_tokens":5,"messages":[{"role":"user","content":"twelve bytes"}]}`,
			kernel.Price{Input: kernel.Dollar, CachedInput: kernel.Dollar / 2, Output: 2 * kernel.Dollar},
			true,
		},
		{
			"anthropic", store.ProviderAnthropic, "/v1/messages", "mock-claude",
			`{"model":"mock-claude","max_tokens":7,"messages":[{"role":"user","content":"twenty bytes of text"}]}`,
			kernel.Price{Input: 3 * kernel.Dollar, Output: 15 * kernel.Dollar},
			false,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := mock(t)
			var rows ledger
			for i := range 3 {
				rows = append(rows, call(t, base, tc.path, "sk-gateway", tc.body, tc.price, i))
			}
			src, err := reconcile.NewSource(tc.typ, reconcile.Endpoint{BaseURL: base + "/v1", AdminKey: "sk-admin-mock"})
			require.NoError(t, err)
			target := reconcile.Target{Provider: "p", Source: src, Deployments: map[string]reconcile.Deployment{"d1": {ProviderModel: tc.model}}}
			today := time.Now().UTC().Truncate(reconcile.Day)
			// 40 days: the reports come in two pages of buckets.
			from, to := today.Add(-39*reconcile.Day), today.Add(reconcile.Day)
			run := func() *reconcile.Result {
				res, err := reconcile.Run(context.Background(), target, rows, from, to, time.Now())
				require.NoError(t, err)
				require.Len(t, res.Cells, 1)
				require.Equal(t, today, res.Cells[0].Day)
				require.Equal(t, tc.model, res.Cells[0].Model)
				require.Equal(t, []string{"public"}, res.Cells[0].Public)
				return res
			}

			res := run()
			require.Equal(t, reconcile.Drift{}, res.Cells[0].Drift(res.RequestsReported), "%+v", res.Cells[0])
			require.Equal(t, tc.requests, res.RequestsReported)
			require.Positive(t, res.Ledger.Cost)
			require.Len(t, res.Cells[0].RequestIDs, 3)

			// A request that bypassed the gateway: in the report, not the ledger.
			bypass := call(t, base, tc.path, "sk-bypass", tc.body, tc.price, 99)
			res = run()
			d := res.Cells[0].Drift(res.RequestsReported)
			require.Equal(t, bypass.Usage.Total(), d.Tokens)
			require.Equal(t, bypass.Cost, d.Cost)
			require.InDelta(t, 0.25, d.CostRel, 1e-9, "one request in four")
			if tc.requests {
				require.Equal(t, int64(1), d.Requests)
			}
			require.Len(t, res.Cells[0].Keys, 2, "the provider's tokens per API key: the gateway's and the bypass's")

			// A dropped ledger row adds its size to the drift.
			rows = rows[1:]
			res = run()
			d = res.Cells[0].Drift(res.RequestsReported)
			require.Equal(t, 2*bypass.Usage.Total(), d.Tokens)
			require.Equal(t, 2*bypass.Cost, d.Cost)
			require.InDelta(t, 0.5, d.CostRel, 1e-9)
			require.InDelta(t, 0.5, res.Worst(), 1e-9)
		})
	}
}

func TestReconcileReportsTheProvidersRefusal(t *testing.T) {
	_, base := mock(t)
	today := time.Now().UTC().Truncate(reconcile.Day)
	for _, typ := range []store.ProviderType{store.ProviderOpenAI, store.ProviderAnthropic} {
		src, err := reconcile.NewSource(typ, reconcile.Endpoint{BaseURL: base + "/v1", AdminKey: "sk-wrong"})
		require.NoError(t, err)
		_, err = reconcile.Run(context.Background(), reconcile.Target{Provider: "p", Source: src}, ledger{}, today, today.Add(reconcile.Day), time.Now())
		require.ErrorIs(t, err, reconcile.ErrProvider)
		require.ErrorContains(t, err, "401")
	}
	_, err := reconcile.NewSource(store.ProviderBedrock, reconcile.Endpoint{AdminKey: "x"})
	require.ErrorIs(t, err, reconcile.ErrUnsupported)
	_, err = reconcile.NewSource(store.ProviderOpenAI, reconcile.Endpoint{})
	require.ErrorIs(t, err, reconcile.ErrNoAdminCredential)
}

func TestCheckRange(t *testing.T) {
	d := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, reconcile.CheckRange(d, d.Add(reconcile.Day)))
	require.ErrorIs(t, reconcile.CheckRange(d, d), reconcile.ErrRange)
	require.ErrorIs(t, reconcile.CheckRange(d.Add(time.Hour), d.Add(reconcile.Day)), reconcile.ErrRange)
	require.ErrorIs(t, reconcile.CheckRange(d, d.Add(93*reconcile.Day)), reconcile.ErrRange)
}
