package ownership

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

func TestScanRequest(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       Request
	}{
		{"defaults", `{"model":"m"}`, Request{Store: true}},
		{
			"all", `{"store":false,"background":true,"previous_response_id":"resp_1","conversation":"conv_1"}`,
			Request{Background: true, Previous: "resp_1", Conversation: "conv_1"},
		},
		{"conversation object", `{"conversation":{"id":"conv_2"}}`, Request{Store: true, Conversation: "conv_2"}},
		{"not booleans", `{"store":"no","background":1}`, Request{Store: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ScanRequest([]byte(tc.body)))
		})
	}
}

func TestResponsePath(t *testing.T) {
	for _, tc := range []struct {
		method, path, id, sub string
		ok                    bool
	}{
		{http.MethodGet, "/v1/responses/resp_1", "resp_1", "", true},
		{http.MethodGet, "/v1/responses/resp_1?stream=true", "resp_1", "", true},
		{http.MethodDelete, "/v1/responses/resp_1", "resp_1", "", true},
		{http.MethodGet, "/v1/responses/resp_1/input_items", "resp_1", "input_items", true},
		{http.MethodPost, "/v1/responses/resp_1/cancel", "resp_1", "cancel", true},
		{http.MethodPost, "/v1/responses/resp_1", "", "", false},
		{http.MethodGet, "/v1/responses", "", "", false},
		{http.MethodGet, "/v1/responses/%zz", "", "", false},
	} {
		id, sub, _, ok := ResponsePath(tc.method, tc.path)
		require.Equal(t, tc.ok, ok, tc.method+" "+tc.path)
		require.Equal(t, tc.id, id)
		require.Equal(t, tc.sub, sub)
	}
}

func TestConversationPath(t *testing.T) {
	id, rest, ok := ConversationPath("/v1/conversations/conv_1/items?limit=2")
	require.True(t, ok)
	require.Equal(t, "conv_1", id)
	require.Equal(t, "/conv_1/items?limit=2", rest)
	require.False(t, DeletesConversation(http.MethodDelete, rest))
	require.True(t, DeletesConversation(http.MethodDelete, "/conv_1"))
	_, _, ok = ConversationPath("/v1/conversationsx")
	require.False(t, ok)
	require.Equal(t, "conversation", HeldKind("conv_1"))
	require.Equal(t, "response", HeldKind("resp_1"))
}

func TestCreatedID(t *testing.T) {
	stream := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_9\"}}\n\nevent: x\ndata: {}\n\n"
	var c CreatedID
	for i := range len(stream) { // one byte at a time
		id, ok := c.Feed([]byte{stream[i]})
		require.True(t, ok)
		if id != "" {
			require.Equal(t, "resp_9", id)
			return
		}
	}
	t.Fatal("no id")
}

func TestCreatedIDGivesUp(t *testing.T) {
	var c CreatedID
	_, ok := c.Feed(make([]byte, MaxCreatedEvent+1))
	require.False(t, ok)
	_, ok = c.Feed([]byte("data: {\"response\":{\"id\":\"r\"}}\n\n"))
	require.False(t, ok)
}

func TestSettleStatus(t *testing.T) {
	for status, want := range map[string]kernel.Status{
		"completed": kernel.StatusCompleted, "incomplete": kernel.StatusCompleted,
		"failed": kernel.StatusFailed, "cancelled": kernel.StatusAborted,
	} {
		st, ok := SettleStatus(status)
		require.True(t, ok)
		require.Equal(t, want, st)
		require.False(t, Unfinished(status))
	}
	for _, status := range []string{"queued", "in_progress"} {
		_, ok := SettleStatus(status)
		require.False(t, ok)
		require.True(t, Unfinished(status))
	}
}
