package responses

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/schema/openai"
)

// mem is a Store in a map, by key and id.
type mem map[[2]string]Stored

func (m mem) PutResponse(_ context.Context, r *Stored) error {
	m[[2]string{r.KeyID, r.ID}] = *r
	return nil
}

func (m mem) GetResponse(_ context.Context, keyID, id string) (*Stored, error) {
	r, ok := m[[2]string{keyID, id}]
	if !ok {
		return nil, ErrNotFound
	}
	return &r, nil
}

func (m mem) DeleteResponse(_ context.Context, keyID, id string) error {
	if _, ok := m[[2]string{keyID, id}]; !ok {
		return ErrNotFound
	}
	delete(m, [2]string{keyID, id})
	return nil
}

// TestSaveThenHistory: a saved response comes back as its input items (ids
// given to those without) followed by its output as assistant items.
func TestSaveThenHistory(t *testing.T) {
	m := mem{}
	args := `{"x":1}`
	r := &openai.Response{ID: "resp_abc", Output: []openai.OutputItem{
		{Type: "message", ID: "msg_out", Content: &[]openai.OutputContent{{Type: "output_text", Text: "hi"}}},
		{Type: "function_call", ID: "fc_out", CallID: "call_1", Name: "f", Arguments: &args},
	}}
	input := []openai.InputItem{{Role: "user", Content: json.RawMessage(`"hello"`)}}
	require.NoError(t, Save(context.Background(), m, "k", r, input, time.Unix(1, 0)))
	sr, err := m.GetResponse(context.Background(), "k", "resp_abc")
	require.NoError(t, err)
	items, err := History(sr)
	require.NoError(t, err)
	require.Len(t, items, 3)
	require.Equal(t, "msg_abc_in0", items[0].ID)
	require.Equal(t, "message", items[0].Type)
	require.Equal(t, "assistant", items[1].Role)
	require.JSONEq(t, `[{"type":"output_text","text":"hi"}]`, string(items[1].Content))
	require.Equal(t, openai.InputItem{Type: "function_call", ID: "fc_out", CallID: "call_1", Name: "f", Arguments: args}, items[2])
}

// TestServe: GET, input_items (newest first unless order=asc), DELETE, and
// 404 for another key, an unknown path or no store; a failing store is a
// StoreError.
func TestServe(t *testing.T) {
	ctx := context.Background()
	m := mem{{"k", "resp_1"}: {ID: "resp_1", KeyID: "k", Response: []byte(`{"id":"resp_1"}`), Input: []byte(`[{"id":"a"},{"id":"b"}]`)}}
	status, body, err := Serve(ctx, m, "k", http.MethodGet, "/v1/responses/resp_1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"id":"resp_1"}`, string(body))

	_, body, _ = Serve(ctx, m, "k", http.MethodGet, "/v1/responses/resp_1/input_items")
	require.JSONEq(t, `{"object":"list","data":[{"id":"b"},{"id":"a"}],"first_id":"b","last_id":"a","has_more":false}`, string(body))
	_, body, _ = Serve(ctx, m, "k", http.MethodGet, "/v1/responses/resp_1/input_items?order=asc")
	require.JSONEq(t, `{"object":"list","data":[{"id":"a"},{"id":"b"}],"first_id":"a","last_id":"b","has_more":false}`, string(body))

	for _, c := range []struct {
		rs                Store
		key, method, path string
	}{
		{m, "other", http.MethodGet, "/v1/responses/resp_1"},
		{m, "k", http.MethodPost, "/v1/responses/resp_1"},
		{m, "k", http.MethodGet, "/v1/responses/resp_1/other"},
		{nil, "k", http.MethodGet, "/v1/responses/resp_1"},
	} {
		status, _, err := Serve(ctx, c.rs, c.key, c.method, c.path)
		require.NoError(t, err)
		require.Equal(t, http.StatusNotFound, status, c)
	}

	status, body, err = Serve(ctx, m, "k", http.MethodDelete, "/v1/responses/resp_1")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status)
	require.JSONEq(t, `{"id":"resp_1","object":"response","deleted":true}`, string(body))
	require.Empty(t, m)

	_, _, err = Serve(ctx, failing{}, "k", http.MethodGet, "/v1/responses/resp_1")
	var se *StoreError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "read", se.Op)
}

type failing struct{ mem }

func (failing) GetResponse(context.Context, string, string) (*Stored, error) {
	return nil, errors.New("down")
}
