package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// retryGroup puts deployments (each on the mock's /d/ID) and group (ID
// "routed" when empty), and waits until the group serves (set the faults
// after it); the mock's counts start from zero.
func retryGroup(t *testing.T, r *running, group *store.ModelGroup, deps ...*store.Deployment) string {
	t.Helper()
	for _, d := range deps {
		put(t, r.st, "p"+d.ID, &store.Provider{ID: "p" + d.ID, Type: store.ProviderOpenAI, BaseURL: r.mockURL + "/d/" + d.ID + "/v1"})
		d.Provider, d.ProviderModel = "p"+d.ID, "mock-gpt"
		put(t, r.st, d.ID, d)
	}
	if group.ID == "" {
		group.ID = "routed"
	}
	put(t, r.st, group.ID, group)
	key := r.key(t, "k", kernel.Limits{})
	r.warm(t, key, `{"model":"`+group.ID+`","messages":[{"role":"user","content":"warm up"}],"max_tokens":2}`)
	r.mock.ResetDeployments()
	return key
}

const routedBody = `{"model":"routed","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`

// Through the built-in data plane (in-process and over gRPC), a dead and a
// healthy deployment: with retries no client sees an error over 200
// requests, and the dead one stops receiving once it cools down.
func TestRetriesHideADeadDeployment(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[overGRPC], func(t *testing.T) {
			r := start(t, overGRPC)
			key := retryGroup(t, r, &store.ModelGroup{Deployments: []string{"dead", "ok"}},
				&store.Deployment{ID: "dead", DeploymentPolicy: store.DeploymentPolicy{AllowedFails: 3, Cooldown: time.Hour}},
				&store.Deployment{ID: "ok"},
			)
			require.NoError(t, r.mock.SetFault("dead", &mockllm.Fault{Mode: mockllm.FaultError500}))
			for i := range 200 {
				resp, b := r.post(t, key, "/v1/chat/completions", routedBody)
				require.Equal(t, http.StatusOK, resp.StatusCode, "request %d: %s", i, b)
				require.Equal(t, "ok", resp.Header.Get("x-tollgate-deployment"))
				require.Empty(t, resp.Header.Get("x-tollgate-retry"), "the token stays inside the gateway")
			}
			deps := r.mock.Deployments()
			require.EqualValues(t, 3, deps["dead"].Received, "allowed_fails, then out of rotation")
			require.EqualValues(t, 200, deps["ok"].Received)
		})
	}
}

// A 500 then a success on the other deployment: two attempts, said by
// x-tollgate-attempts, and two ledger rows (the failed attempt at $0 with
// its deployment and status).
func TestRetryIsTwoAttemptsInTheLedger(t *testing.T) {
	r := start(t, false)
	key := retryGroup(t, r, &store.ModelGroup{Deployments: []string{"flaky", "ok"}},
		&store.Deployment{ID: "flaky", Weight: 1000},
		&store.Deployment{ID: "ok"},
	)
	require.NoError(t, r.mock.SetFault("flaky", &mockllm.Fault{Mode: mockllm.FaultError500, Times: 1}))
	resp, b := r.post(t, key, "/v1/chat/completions", routedBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "2", resp.Header.Get("x-tollgate-attempts"))
	id := resp.Header.Get("x-tollgate-request-id")
	first, rows := attemptRows(t, r, id)
	require.Equal(t, "flaky", rows[first].Deployment)
	require.Equal(t, kernel.StatusFailed, rows[first].Status)
	require.Equal(t, http.StatusInternalServerError, rows[first].HTTPStatus)
	require.Zero(t, rows[first].Cost, "the provider did not bill the failed attempt")
	require.Zero(t, rows[first].Usage.Total())
	require.Equal(t, "ok", rows[id].Deployment)
	require.Equal(t, kernel.StatusCompleted, rows[id].Status)
	require.Positive(t, rows[id].Usage.Total(), "the attempt that served is charged its usage")

	// A stream is retried before its first byte went to the client.
	require.NoError(t, r.mock.SetFault("flaky", &mockllm.Fault{Mode: mockllm.FaultError500, Times: 1}))
	resp, b = r.post(t, key, "/v1/chat/completions", `{"model":"routed","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "2", resp.Header.Get("x-tollgate-attempts"))
	require.Contains(t, string(b), "data: [DONE]")
}

// A deployment that hangs past its timeout: the per-try timeout ends the
// attempt (the data plane's 504), and the other deployment serves.
func TestPerTryTimeoutIsRetried(t *testing.T) {
	r := start(t, false)
	key := retryGroup(t, r, &store.ModelGroup{Deployments: []string{"hung", "ok"}},
		&store.Deployment{ID: "hung", Weight: 1000, DeploymentPolicy: store.DeploymentPolicy{
			FirstByteTimeout: 200 * time.Millisecond, AllowedFails: 100,
		}},
		&store.Deployment{ID: "ok"},
	)
	require.NoError(t, r.mock.SetFault("hung", &mockllm.Fault{Mode: mockllm.FaultHang}))
	for range 3 {
		resp, b := r.post(t, key, "/v1/chat/completions", routedBody)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		require.Equal(t, "ok", resp.Header.Get("x-tollgate-deployment"))
	}
	require.Positive(t, r.mock.Deployments()["hung"].Received)
}

// A context-window refusal is retried on the group's context-window
// fallback.
func TestContextWindowFallbackServes(t *testing.T) {
	r := start(t, false)
	for _, d := range []string{"small", "big"} {
		put(t, r.st, "p"+d, &store.Provider{ID: "p" + d, Type: store.ProviderOpenAI, BaseURL: r.mockURL + "/d/" + d + "/v1"})
		put(t, r.st, d, &store.Deployment{ID: d, Provider: "p" + d, ProviderModel: "mock-gpt"})
	}
	put(t, r.st, "large", &store.ModelGroup{ID: "large", Deployments: []string{"big"}})
	key := retryGroup(t, r, &store.ModelGroup{Deployments: []string{"small"}, GroupRouting: store.GroupRouting{ContextWindowFallbacks: []string{"large"}}})
	require.NoError(t, r.mock.SetFault("small", &mockllm.Fault{Mode: mockllm.FaultContextWindow}))
	resp, b := r.post(t, key, "/v1/chat/completions", routedBody)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "big", resp.Header.Get("x-tollgate-deployment"))
	require.Equal(t, "2", resp.Header.Get("x-tollgate-attempts"))
}

// attemptRows waits for the ledger rows of a request served by its second
// attempt, whose reply carried id (ID-2-x): it returns the first attempt's
// id and the two rows by request id.
func attemptRows(t *testing.T, r *running, id string) (string, map[string]store.LedgerEntry) {
	t.Helper()
	i := strings.LastIndex(id, "-2-")
	require.Positive(t, i, "the second attempt's id starts with the first's: %s", id)
	first := id[:i]
	var rows map[string]store.LedgerEntry
	eventually(t, func() bool {
		all, err := r.st.Entries(context.Background(), store.LedgerFilter{Limit: 1000})
		require.NoError(t, err)
		rows = map[string]store.LedgerEntry{}
		for _, e := range all {
			if e.RequestID == first || e.RequestID == id {
				rows[e.RequestID] = e
			}
		}
		return len(rows) == 2
	})
	return first, rows
}
