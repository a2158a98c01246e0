package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Through the built-in data plane (in-process and over gRPC), a provider
// answering a bare 401 or 403 (no body, no content-type): the client gets a
// 502 upstream_auth_error in its own format (OpenAI chat, Anthropic
// Messages) naming the deployment, not a 401 that blames its key; the ledger
// has each attempt failed at $0 with the provider's status; in a group that
// retries, the other deployment serves and the refusing one cools down after
// its allowed fails.
func TestUpstreamAuthWithNoBody(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[overGRPC], func(t *testing.T) {
			r := start(t, overGRPC)
			key := retryGroup(t, r, &store.ModelGroup{ID: "bare", Deployments: []string{"bare"}}, &store.Deployment{ID: "bare"})
			sent := 0
			for _, mode := range []string{mockllm.FaultUnauthorizedEmpty, mockllm.FaultForbiddenEmpty} {
				require.NoError(t, r.mock.SetFault("bare", &mockllm.Fault{Mode: mode}))
				resp, b := r.post(t, key, "/v1/chat/completions", `{"model":"bare","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
				require.Equal(t, http.StatusBadGateway, resp.StatusCode, "%s: not passed on: the client's key is fine: %q", mode, b)
				require.Equal(t, "application/json", resp.Header.Get("content-type"))
				var oe struct {
					Error struct{ Message, Type, Code string }
				}
				require.NoError(t, json.Unmarshal(b, &oe), string(b))
				require.Equal(t, "upstream_auth_error", oe.Error.Code)
				require.Equal(t, "upstream_auth_error", oe.Error.Type)
				require.Contains(t, oe.Error.Message, "The provider of deployment `bare` rejected the gateway's credentials (HTTP "+mode[:3]+")")

				resp, b = r.post(t, key, "/v1/messages", `{"model":"bare","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
				require.Equal(t, http.StatusBadGateway, resp.StatusCode, "%s: %q", mode, b)
				var ae struct {
					Type  string
					Error struct{ Type, Message string }
				}
				require.NoError(t, json.Unmarshal(b, &ae), string(b))
				require.Equal(t, "error", ae.Type)
				require.Equal(t, "api_error", ae.Error.Type)
				require.Contains(t, ae.Error.Message, "The provider of deployment `bare` rejected the gateway's credentials")
				sent += 2
			}
			require.EqualValues(t, sent, r.mock.Deployments()["bare"].Received)
			rows := failedRows(t, r.st, "bare", sent)
			statuses := map[int]int{}
			for _, e := range rows {
				require.Zero(t, e.Cost, "the provider did not bill it")
				statuses[e.HTTPStatus]++
			}
			require.Equal(t, map[int]int{401: 2, 403: 2}, statuses, "the ledger keeps the provider's status")

			key = retryGroup(t, r, &store.ModelGroup{Deployments: []string{"refused", "ok"}},
				&store.Deployment{ID: "refused", Weight: 1000, DeploymentPolicy: store.DeploymentPolicy{AllowedFails: 2, Cooldown: time.Hour}},
				&store.Deployment{ID: "ok"},
			)
			require.NoError(t, r.mock.SetFault("refused", &mockllm.Fault{Mode: mockllm.FaultUnauthorizedEmpty}))
			for i := range 20 {
				resp, b := r.post(t, key, "/v1/chat/completions", routedBody)
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, b)
				require.Equal(t, "ok", resp.Header.Get("x-tollgate-deployment"))
			}
			deps := r.mock.Deployments()
			require.EqualValues(t, 2, deps["refused"].Received, "allowed_fails, then out of rotation")
			require.EqualValues(t, 20, deps["ok"].Received)
			for _, e := range failedRows(t, r.st, "refused", 2) {
				require.Equal(t, http.StatusUnauthorized, e.HTTPStatus)
				require.Zero(t, e.Cost)
			}
		})
	}
}

// failedRows waits for n failed ledger rows of deployment dep (the warm-up
// request is not one) and returns them.
func failedRows(t *testing.T, st store.Store, dep string, n int) []store.LedgerEntry {
	t.Helper()
	var rows []store.LedgerEntry
	eventually(t, func() bool {
		all, err := st.Entries(context.Background(), store.LedgerFilter{Limit: 1000})
		require.NoError(t, err)
		rows = rows[:0]
		for _, e := range all {
			if e.Deployment == dep && e.Status == kernel.StatusFailed {
				rows = append(rows, e)
			}
		}
		return len(rows) >= n
	})
	require.Len(t, rows, n, "deployment %s", dep)
	return rows
}
