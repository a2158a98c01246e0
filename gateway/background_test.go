package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// nativeBackground configures a native group "bg" on the provider at
// baseURL and returns a key for it.
func nativeBackground(t *testing.T, r *running, st store.Store, baseURL string) string {
	t.Helper()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, st, "native", &store.Provider{ID: "native", Type: store.ProviderOpenAI, BaseURL: baseURL + "/v1", Credential: sealer.Seal([]byte("sk-native")), ResponsesAPI: true})
	put(t, st, "native-1", &store.Deployment{ID: "native-1", Provider: "native", ProviderModel: "mock-native"})
	put(t, st, "bg", &store.ModelPrice{ID: "bg", Price: kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}})
	put(t, st, "bg", &store.ModelGroup{ID: "bg", Deployments: []string{"native-1"}})
	key := r.key(t, "k1", kernel.Limits{})
	r.warm(t, r.key(t, "k0", kernel.Limits{}), `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`)
	return key
}

// postBackground makes a background response and returns its id and the
// POST's request id.
func postBackground(t *testing.T, r *running, key string) (id, requestID string) {
	t.Helper()
	resp, b := r.post(t, key, "/v1/responses", `{"model":"bg","input":"write a long essay in the background","background":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var created struct{ ID, Status string }
	require.NoError(t, json.Unmarshal(b, &created), "%s", b)
	require.Equal(t, "queued", created.Status)
	return created.ID, resp.Header.Get("x-tollgate-request-id")
}

// requireBilledOnce: the key's one ledger row is the POST's, completed,
// equal to the mock's bill.
func requireBilledOnce(t *testing.T, r *running, st store.Store, postID string) {
	t.Helper()
	require.NoError(t, st.Flush(context.Background()))
	rows := entriesOf(t, st, "k1")
	require.Len(t, rows, 1, "%+v", rows)
	e := rows[0]
	require.Equal(t, postID, e.RequestID)
	require.Equal(t, kernel.StatusCompleted, e.Status)
	bill := r.mock.Stats().Keys["sk-native"]
	require.Equal(t, bill.InputTokens, e.Usage.Input+e.Usage.CachedInput)
	require.Equal(t, bill.OutputTokens, e.Usage.Output+e.Usage.Reasoning)
	require.Positive(t, e.Usage.Output)
	require.Equal(t, kernel.Cost(kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}, e.Usage), e.Cost)
}

// TestBackgroundPollerSettlesUnpolled (issue 37): a background response
// its client never polls is settled by the gateway's poller (the batch
// poller's tick, under its lease): nothing while the provider runs it, then
// once, from the provider's usage, and nothing is left pending.
func TestBackgroundPollerSettlesUnpolled(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	r := startWith(t, false, st, nil)
	key := nativeBackground(t, r, st, r.mockURL)
	_, postID := postBackground(t, r, key)
	ctx := context.Background()

	n, err := r.g.SettleBatchesNow(ctx) // the mock: in_progress
	require.NoError(t, err)
	require.Zero(t, n)
	require.NoError(t, st.Flush(ctx))
	require.Empty(t, entriesOf(t, st, "k1"), "nothing settled while it runs")
	n, err = r.g.SettleBatchesNow(ctx) // completed
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = r.g.SettleBatchesNow(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left")
	requireBilledOnce(t, r, st, postID)
	pending, err := st.PendingResponseOwners(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)
}
