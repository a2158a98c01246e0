package cli_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestReconcileCommand: a provider with an admin credential, two requests
// served by the mock and one of them in the ledger: the command shows the
// other as the drift of (today, mock-gpt), as a table, CSV and JSON.
func TestReconcileCommand(t *testing.T) {
	mock := mockllm.New(mockllm.DefaultConfig())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mock.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	base := "http://" + lis.Addr().String()

	s := startServer(t, memstore.New())
	t.Setenv("TEST_MOCK_ADMIN", "sk-admin-mock")
	out, err := s.run(t, "provider", "create", "p", "--type", "openai", "--base-url", base+"/v1", "--admin-credential-env", "TEST_MOCK_ADMIN")
	require.NoError(t, err)
	require.Contains(t, out, "ADMIN CREDENTIAL  set (write-only)")
	require.NotContains(t, out, "sk-admin-mock")
	_, err = s.run(t, "deployment", "create", "d1", "--provider", "p", "--model", "mock-gpt")
	require.NoError(t, err)

	for range 2 { // 3 prompt tokens, 4 output tokens each: $0.000011
		req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"model":"mock-gpt","max_tokens":4,"messages":[{"role":"user","content":"ten bytes!"}]}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer sk-up")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	now := time.Now().UTC()
	u := kernel.Usage{Input: 3, Output: 4}
	require.NoError(t, s.st.Append(context.Background(), store.LedgerEntry{
		RequestID: "req-1", KeyID: "k", Model: "gpt", Deployment: "d1", Usage: u,
		Cost: kernel.Cost(kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}, u), HTTPStatus: 200, StartedAt: now, EndedAt: now,
	}))
	require.NoError(t, s.st.Flush(context.Background()))
	today := now.Format(time.DateOnly)

	out, err = s.run(t, "reconcile", "--provider", "p", "--from", today, "--to", today)
	require.NoError(t, err)
	require.Contains(t, out, "DAY")
	line := strings.Fields(strings.Split(out, "\n")[1])
	require.Equal(t, []string{today, "mock-gpt", "gpt", "1", "/", "2", "1", "7", "/", "14", "7", "50.00%", "$0.000011", "/", "$0.000022", "$0.000011", "50.00%", "1"}, line, out)

	out, err = s.run(t, "reconcile", "run", "--provider", "p", "--from", today, "--format", "csv")
	require.NoError(t, err)
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 2)
	require.Equal(t, []string{today, "mock-gpt", "gpt", "1", "2", "1", "0.5", "7", "14", "7", "0.5", "0.000011", "0.000022", "0.000011", "0.5", "req-1"}, rows[1])

	out, err = s.run(t, "reconcile", "--provider", "p", "--from", today, "--format", "json")
	require.NoError(t, err)
	var rep struct {
		Report struct {
			Cells []struct {
				RequestIDs []string          `json:"request_ids"`
				Keys       map[string]string `json:"provider_key_tokens"` // int64 as protojson writes it
			} `json:"cells"`
			WorstRel float64 `json:"worst_rel"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, []string{"req-1"}, rep.Report.Cells[0].RequestIDs)
	require.Equal(t, map[string]string{"key_" + mockllm.APIKeyID("sk-up"): "14"}, rep.Report.Cells[0].Keys)
	require.InDelta(t, 0.5, rep.Report.WorstRel, 1e-9)

	_, err = s.run(t, "reconcile", "--from", today)
	require.ErrorContains(t, err, "--provider is required")
	_, err = s.run(t, "reconcile", "--provider", "p", "--format", "xml")
	require.ErrorContains(t, err, "--format must be table, json or csv")
	_, err = s.run(t, "provider", "update", "p", "--clear-admin-credential")
	require.NoError(t, err)
	_, err = s.run(t, "reconcile", "--provider", "p", "--from", today)
	require.ErrorContains(t, err, "no admin credential")
}
