package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// TestGatewayBackgroundResponseSettledOnce (issue 37): a background
// response on a native group, over the whole gateway with SQLite: its POST
// answers queued and charges nothing yet; polled through the gateway until
// the mock completes it (and bills it), it is settled once — one ledger
// row, the POST's, equal to the mock's bill — and the polls name the model
// the client asked for; polls after that add nothing.
func TestGatewayBackgroundResponseSettledOnce(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "t.db"))
	require.NoError(t, err)
	r := startWith(t, false, st, nil)
	sealer, err := secret.NewSealer(make([]byte, 32))
	require.NoError(t, err)
	put(t, st, "native", &store.Provider{ID: "native", Type: store.ProviderOpenAI, BaseURL: r.mockURL + "/v1", Credential: sealer.Seal([]byte("sk-native")), ResponsesAPI: true})
	put(t, st, "native-1", &store.Deployment{ID: "native-1", Provider: "native", ProviderModel: "mock-native"})
	put(t, st, "bg", &store.ModelPrice{ID: "bg", Price: kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}})
	put(t, st, "bg", &store.ModelGroup{ID: "bg", Deployments: []string{"native-1"}})
	key := r.key(t, "k1", kernel.Limits{})
	r.warm(t, r.key(t, "k0", kernel.Limits{}), `{"model":"demo","messages":[{"role":"user","content":"hi"}]}`)

	resp, b := r.post(t, key, "/v1/responses", `{"model":"bg","input":"write a long essay in the background","background":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var created struct{ ID, Status, Model string }
	require.NoError(t, json.Unmarshal(b, &created), "%s", b)
	require.Equal(t, "queued", created.Status)
	require.Equal(t, "bg", created.Model)
	postID := resp.Header.Get("x-tollgate-request-id")
	require.NoError(t, st.Flush(context.Background()))
	require.Empty(t, entriesOf(t, st, "k1"), "nothing settled while it runs")

	get := func() (string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, r.url+"/v1/responses/"+created.ID, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
		var out struct{ Status, Model string }
		require.NoError(t, json.Unmarshal(b, &out), "%s", b)
		return out.Status, out.Model
	}
	var statuses []string
	for range 5 {
		s, model := get()
		require.Equal(t, "bg", model, "the name the client asked for, not the provider's")
		statuses = append(statuses, s)
		if s == "completed" {
			break
		}
	}
	require.Equal(t, []string{"in_progress", "completed"}, statuses)
	s, _ := get() // a poll after the end adds nothing
	require.Equal(t, "completed", s)

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

// entriesOf lists the key's ledger rows.
func entriesOf(t *testing.T, st store.Store, keyID string) []store.LedgerEntry {
	t.Helper()
	all, err := st.Entries(context.Background(), store.LedgerFilter{})
	require.NoError(t, err)
	var out []store.LedgerEntry
	for _, e := range all {
		if e.KeyID == keyID {
			out = append(out, e)
		}
	}
	return out
}
