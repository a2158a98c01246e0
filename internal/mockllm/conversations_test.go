package mockllm

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConversations: a conversation is the key's only; items given at
// creation, added, listed (newest first by default), retrieved and deleted;
// a response made in it appends its input and output and names it; another
// key's response naming it is a 404; deleted, it is gone.
func TestConversations(t *testing.T) {
	h := start(t, testConfig())
	conv := decodeJSON(t, h.post("/v1/conversations", map[string]any{
		"metadata": map[string]string{"topic": "demo"},
		"items":    []map[string]any{{"type": "message", "role": "user", "content": "hello"}},
	}, "Authorization", "Bearer k1"), http.StatusOK)
	id := conv["id"].(string)
	require.Regexp(t, `^conv_[0-9a-f]+$`, id)
	require.Equal(t, "conversation", conv["object"])
	require.Equal(t, conv, decodeJSON(t, h.do(http.MethodGet, "/v1/conversations/"+id, "k1"), http.StatusOK))
	decodeJSON(t, h.do(http.MethodGet, "/v1/conversations/"+id, "k2"), http.StatusNotFound)

	r := decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "one two", "conversation": id}, "Authorization", "Bearer k1"), http.StatusOK)
	require.Equal(t, map[string]any{"id": id}, r["conversation"])
	decodeJSON(t, h.post("/v1/responses", map[string]any{"model": "m", "input": "x", "conversation": map[string]string{"id": id}}, "Authorization", "Bearer k2"), http.StatusNotFound)

	added := decodeJSON(t, h.post("/v1/conversations/"+id+"/items", map[string]any{
		"items": []map[string]any{{"type": "message", "role": "user", "content": "more"}},
	}, "Authorization", "Bearer k1"), http.StatusOK)
	require.Len(t, added["data"], 1)
	list := decodeJSON(t, h.do(http.MethodGet, "/v1/conversations/"+id+"/items?order=asc", "k1"), http.StatusOK)
	data := list["data"].([]any)
	require.Len(t, data, 4, "hello, one two, the reply, more")
	require.Equal(t, "assistant", data[2].(map[string]any)["role"])
	first := data[0].(map[string]any)["id"].(string)
	require.Equal(t, first, list["first_id"])
	got := decodeJSON(t, h.do(http.MethodGet, "/v1/conversations/"+id+"/items/"+first, "k1"), http.StatusOK)
	require.Equal(t, "hello", got["content"])
	decodeJSON(t, h.do(http.MethodDelete, "/v1/conversations/"+id+"/items/"+first, "k1"), http.StatusOK)
	decodeJSON(t, h.do(http.MethodGet, "/v1/conversations/"+id+"/items/"+first, "k1"), http.StatusNotFound)

	upd := decodeJSON(t, h.post("/v1/conversations/"+id, map[string]any{"metadata": map[string]string{"topic": "other"}}, "Authorization", "Bearer k1"), http.StatusOK)
	require.Equal(t, map[string]any{"topic": "other"}, upd["metadata"])
	del := decodeJSON(t, h.do(http.MethodDelete, "/v1/conversations/"+id, "k1"), http.StatusOK)
	require.Equal(t, "conversation.deleted", del["object"])
	decodeJSON(t, h.do(http.MethodGet, "/v1/conversations/"+id, "k1"), http.StatusNotFound)
}
