package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// nativeBackground configures a native group "bg" on the provider at
// baseURL and returns a key for it.
func nativeBackground(t *testing.T, r *running, st store.Store, baseURL string, lim kernel.Limits) string {
	t.Helper()
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, st, "native", &store.Provider{ID: "native", Type: store.ProviderOpenAI, BaseURL: baseURL + "/v1", Credential: sealer.Seal([]byte("sk-native")), ResponsesAPI: true})
	put(t, st, "native-1", &store.Deployment{ID: "native-1", Provider: "native", ProviderModel: "mock-native"})
	put(t, st, "bg", &store.ModelPrice{ID: "bg", Price: kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}})
	put(t, st, "bg", &store.ModelGroup{ID: "bg", Deployments: []string{"native-1"}})
	key := r.key(t, "k1", lim)
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
func requireBilledOnce(t *testing.T, mock *mockllm.Server, st store.Store, postID string) {
	t.Helper()
	require.NoError(t, st.Flush(context.Background()))
	rows := entriesOf(t, st, "k1")
	require.Len(t, rows, 1, "%+v", rows)
	e := rows[0]
	require.Equal(t, postID, e.RequestID)
	require.Equal(t, kernel.StatusCompleted, e.Status)
	bill := mock.Stats().Keys["sk-native"]
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
	key := nativeBackground(t, r, st, r.mockURL, kernel.Limits{})
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
	requireBilledOnce(t, r.mock, st, postID)
	pending, err := st.PendingResponseOwners(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)
}

// outlivingMock is a mock provider that outlives the gateways of a test.
func outlivingMock(t *testing.T) (*mockllm.Server, string) {
	t.Helper()
	m := mockllm.New(mockllm.DefaultConfig())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("mock provider: %v", err)
		}
	})
	return m, "http://" + l.Addr().String()
}

// budget100 is a total budget of $100 on the key: its window shows what
// is reserved.
var budget100 = kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 100 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodTotal}}}}

// reservedOnKey is what the key's budget window holds reserved.
func reservedOnKey(r *running) kernel.Money {
	_, reserved := r.g.Accountant.State().Usage(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, kernel.Period{Kind: kernel.PeriodTotal}, time.Now())
	return reserved
}

// backgroundBeforeARestart makes a background response on a gateway that
// then stops, while its provider (mock) keeps running it; it returns the
// client key, the response id, the POST's request id and what its
// admission reserved.
func backgroundBeforeARestart(t *testing.T, st store.Store, mockURL string) (key, id, postID string, reserved kernel.Money) {
	t.Helper()
	t.Run("before the restart", func(t *testing.T) {
		r := startWith(t, false, st, nil, func(c *gateway.Config, _ *gateway.Options) { c.BatchPollInterval = 0 })
		key = nativeBackground(t, r, st, mockURL, budget100)
		id, postID = postBackground(t, r, key)
		reserved = reservedOnKey(r)
		require.Positive(t, reserved)
	}) // the process stops here, its counters with it
	return key, id, postID, reserved
}

// TestHoldReservedAgain (issue 37): the counters of one process start
// empty, so a restarted gateway reserves again the hold of each background
// response still pending — the same amount, under the POST's request id —
// and its budget sees it before any request; a hold whose lease ended while
// no gateway ran is reserved for a grace, not expired at once.
func TestHoldReservedAgain(t *testing.T) {
	_, mockURL := outlivingMock(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	_, _, _, reserved := backgroundBeforeARestart(t, st, mockURL)

	later := func() time.Time { return time.Now().Add(3 * time.Hour) } // the 1 h lease ended while down
	r := startWith(t, false, st, nil, func(c *gateway.Config, o *gateway.Options) { c.BatchPollInterval, o.Now = 0, later })
	require.Equal(t, 1, r.g.Accountant.State().Pending(), "the hold, reserved again")
	_, held := r.g.Accountant.State().Usage(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, kernel.Period{Kind: kernel.PeriodTotal}, later())
	require.Equal(t, reserved, held)
	r.g.Accountant.ExpireNow(context.Background())
	require.Equal(t, 1, r.g.Accountant.State().Pending(), "a grace for the poller, not expired at once")
}

// TestBackgroundPendingAcrossARestartSettlesOnce (issue 37): a background
// response admitted by a gateway that stops, finished by its provider while
// no gateway runs and past its lease, is settled once by the next gateway
// from what the provider ran — not left uncharged (its reservation died
// with the first process) nor charged its worst case — and nothing more:
// not by a later client poll, nor by the restored hold's expiry.
func TestBackgroundPendingAcrossARestartSettlesOnce(t *testing.T) {
	mock, mockURL := outlivingMock(t)
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	key, id, postID, _ := backgroundBeforeARestart(t, st, mockURL)
	ctx := context.Background()

	var offset atomic.Int64
	offset.Store(int64(3 * time.Hour)) // the 1 h lease ended while down
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	r := startWith(t, false, st, nil, func(c *gateway.Config, o *gateway.Options) { c.BatchPollInterval, o.Now = 0, now })
	for range 2 { // the mock: in_progress, then completed
		_, err := r.g.SettleBatchesNow(ctx)
		require.NoError(t, err)
	}
	requireBilledOnce(t, mock, st, postID)
	require.Zero(t, r.g.Accountant.State().Pending(), "the hold is released")

	req, err := http.NewRequest(http.MethodGet, r.url+"/v1/responses/"+id, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	offset.Add(int64(time.Hour)) // past the grace
	r.g.Accountant.ExpireNow(ctx)
	requireBilledOnce(t, mock, st, postID)
}
