package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// TestContentPolicyFallbackToAnthropic: through the built-in data plane
// (in-process and over gRPC) on the per-try route's internal redirect, a
// content-policy refusal of an OpenAI group's only deployment is served by
// its content_policy_fallbacks group, an Anthropic deployment (translated),
// streamed and not; the ledger has the refused try at $0 with its 400 and
// the attempt that served.
func TestContentPolicyFallbackToAnthropic(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[overGRPC], func(t *testing.T) {
			r := start(t, overGRPC)
			put(t, r.st, "pclaude", &store.Provider{ID: "pclaude", Type: store.ProviderAnthropic, BaseURL: r.mockURL + "/d/claude/v1"})
			put(t, r.st, "claude", &store.Deployment{ID: "claude", Provider: "pclaude", ProviderModel: "mock-claude"})
			put(t, r.st, "safe", &store.ModelGroup{ID: "safe", Deployments: []string{"claude"}})
			key := retryGroup(t, r, &store.ModelGroup{Deployments: []string{"small"}, GroupRouting: store.GroupRouting{ContentPolicyFallbacks: []string{"safe"}}},
				&store.Deployment{ID: "small"})
			require.NoError(t, r.mock.SetFault("small", &mockllm.Fault{Mode: mockllm.FaultContentPolicy}))
			for _, body := range []string{routedBody, strings.Replace(routedBody, `{"model":"routed",`, `{"model":"routed","stream":true,`, 1)} {
				resp, b := r.post(t, key, "/v1/chat/completions", body)
				require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
				require.Equal(t, "claude", resp.Header.Get("x-tollgate-deployment"))
				require.Equal(t, "2", resp.Header.Get("x-tollgate-attempts"))
				require.Contains(t, string(b), "chat.completion", "translated back for the OpenAI client")
				id := resp.Header.Get("x-tollgate-request-id")
				first, rows := attemptRows(t, r, id)
				require.Equal(t, "small", rows[first].Deployment)
				require.Equal(t, kernel.StatusFailed, rows[first].Status)
				require.Equal(t, http.StatusBadRequest, rows[first].HTTPStatus)
				require.Zero(t, rows[first].Cost, "the refused try is $0")
				require.Equal(t, "claude", rows[id].Deployment)
				require.Equal(t, kernel.StatusCompleted, rows[id].Status)
				require.Positive(t, rows[id].Usage.Total())
			}
		})
	}
}
