package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// A stream cut mid-way on a group that retries elsewhere (per-try routes: the
// router-level stream does not translate, each try's upstream stream does):
// the client still gets the error event in its own format, and the request is
// settled once, as aborted, with the output the try saw — not at $0 by the
// router-level stream that never saw the body.
func TestStreamCutOnPerTryRoutes(t *testing.T) {
	cases := []struct{ name, path, body, want string }{
		{
			"chat", "/v1/chat/completions",
			`{"model":"routed","stream":true,"max_tokens":40,"messages":[{"role":"user","content":"tell me a long story"}]}`,
			`"code":"upstream_reset"`,
		},
		{
			"messages", "/v1/messages",
			`{"model":"routed","stream":true,"max_tokens":40,"messages":[{"role":"user","content":"tell me a long story"}]}`,
			"event: error\n",
		},
	}
	for _, overGRPC := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[overGRPC], func(t *testing.T) {
			r := start(t, overGRPC)
			key := retryGroup(t, r, &store.ModelGroup{Deployments: []string{"a", "b"}},
				&store.Deployment{ID: "a"}, &store.Deployment{ID: "b"})
			ids := map[string]bool{}
			for _, tc := range cases {
				req, err := http.NewRequest(http.MethodPost, r.url+tc.path, strings.NewReader(tc.body))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("x-mock-disconnect-after", "3")
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err, "%s: the stream ends cleanly, not cut: %s", tc.name, b)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", tc.name, b)
				require.Contains(t, string(b), tc.want, "%s: the error event in the client's format", tc.name)
				id := resp.Header.Get("x-tollgate-request-id")
				require.NotEmpty(t, id)
				ids[id] = true
			}
			require.NoError(t, r.st.Flush(context.Background()))
			rows, err := r.st.Entries(context.Background(), store.LedgerFilter{Limit: 1000})
			require.NoError(t, err)
			seen := map[string]int{}
			for _, e := range rows {
				if !ids[e.RequestID] {
					continue
				}
				seen[e.RequestID]++
				require.Equal(t, kernel.StatusAborted, e.Status, "%s", e.RequestID)
				require.Positive(t, e.Usage.Output, "%s: charged the output the try saw", e.RequestID)
			}
			require.Len(t, seen, len(cases), "every cut stream is in the ledger")
			for id, n := range seen {
				require.Equal(t, 1, n, "%s settled once", id)
			}
		})
	}
}
