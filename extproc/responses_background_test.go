package extproc

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
)

// backgroundReply is a native response object of a background response in
// status st, with usage when it is not "".
func backgroundReply(id, st, usage string) string {
	u := "null"
	if usage != "" {
		u = usage
	}
	return `{"id":"` + id + `","object":"response","created_at":1,"status":"` + st + `","background":true,"model":"gpt-4o-2024","output":[],"usage":` + u + `}`
}

// TestNativeBackgroundSettledOnce (issue 37): a background response's POST
// answers queued and is not settled; its reservation holds under the
// background lease; the polls that find it still running settle nothing,
// the first that finds it completed settles it once from its usage (with
// the POST's request id, key and model), later polls nothing; every poll
// names the model the client asked for. A cancelled one is settled with
// what its reply says ran (nothing here); when the store cannot keep the
// settlement it is settled at once from the estimate.
func TestNativeBackgroundSettledOnce(t *testing.T) {
	owners := &memOwners{}
	e, _ := routedEnvWith(t, []Option{WithResponseOwners(owners)},
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{nativeDep("a")}})
	rec := &recorder{resp: jsonResponse(200, backgroundReply("resp_bg1", "queued", ""))}
	resp := e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"think hard","background":true}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	postID := resp.Headers.Value(hdrRequestID)
	require.Empty(t, e.acct.Records(), "queued: nothing to settle yet")
	require.Equal(t, DefaultBackgroundLease, e.acct.Admits()[0].Lease)
	o, err := owners.ResponseOwner(t.Context(), "resp_bg1")
	require.NoError(t, err, "recorded at once, not with a ledger row")
	require.Equal(t, ResponseOwner{ID: "resp_bg1", KeyID: "k1", Deployment: "a", Model: "gpt", Store: true, Background: true, Run: "resp_bg1", Pending: true}, *o)

	poll := func(key string, reply string) (int, map[string]any) {
		t.Helper()
		rec.resp = jsonResponse(200, reply)
		resp := e.do(t, get("/v1/responses/resp_bg1", key), rec.upstream)
		var m map[string]any
		if resp.Status == 200 {
			require.NoError(t, json.Unmarshal(resp.Body, &m), "%s", resp.Body)
		}
		return resp.Status, m
	}
	st, m := poll(clientKey, backgroundReply("resp_bg1", "in_progress", ""))
	require.Equal(t, 200, st)
	require.Equal(t, "gpt", m["model"], "the name the client asked for, not the provider's")
	require.Empty(t, e.acct.Records())

	st, _ = poll(otherKey, backgroundReply("resp_bg1", "completed", `{"input_tokens":30,"output_tokens":70,"total_tokens":100}`))
	require.Equal(t, 404, st, "another key's poll settles nothing")
	require.Empty(t, e.acct.Records())

	done := backgroundReply("resp_bg1", "completed", `{"input_tokens":30,"output_tokens":70,"total_tokens":100}`)
	st, m = poll(clientKey, done)
	require.Equal(t, 200, st)
	require.Equal(t, "completed", m["status"])
	require.Equal(t, "gpt", m["model"])
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, postID, recs[0].RequestID, "the POST's reservation is the one settled")
	require.Equal(t, kernel.Usage{Input: 30, Output: 70}, recs[0].Usage)
	require.Equal(t, kernel.StatusCompleted, recs[0].Status)
	require.Equal(t, "k1", recs[0].Principal.KeyID)
	require.Equal(t, "a", recs[0].Deployment)
	require.Nil(t, recs[0].Owner)
	for range 2 {
		st, _ = poll(clientKey, done)
		require.Equal(t, 200, st)
	}
	require.Len(t, e.acct.Records(), 1, "settled once")

	// Cancelled before it ran: released (no usage in the reply).
	rec.resp = jsonResponse(200, backgroundReply("resp_bg2", "queued", ""))
	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"never mind","background":true}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	rec.resp = jsonResponse(200, backgroundReply("resp_bg2", "cancelled", ""))
	resp = e.do(t, post("/v1/responses/resp_bg2/cancel", clientKey, ""), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	recs = e.acct.Records()
	require.Len(t, recs, 2)
	require.Equal(t, kernel.StatusAborted, recs[1].Status)
	require.Equal(t, kernel.Usage{}, recs[1].Usage)

	// The store cannot keep it: settled now, from the estimate.
	owners.failPut = errors.New("disk full")
	rec.resp = jsonResponse(200, backgroundReply("resp_bg3", "queued", ""))
	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"again","background":true}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	recs = e.acct.Records()
	require.Len(t, recs, 3)
	require.Positive(t, recs[2].Usage.Input)

	// Without background, or streamed: the default lease, settled at once.
	owners.failPut = nil
	rec.resp = jsonResponse(200, nativeReply("resp_fg"))
	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"now"}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	admits := e.acct.Admits()
	require.Zero(t, admits[len(admits)-1].Lease)
	require.Len(t, e.acct.Records(), 4)
}

// TestNativeBackgroundStreamedPoll: GET ?stream=true of a background
// response passes as a stream, each event naming the model the client asked
// for, and its final event's usage settles the response once.
func TestNativeBackgroundStreamedPoll(t *testing.T) {
	owners := &memOwners{}
	e, _ := routedEnvWith(t, []Option{WithResponseOwners(owners)},
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{nativeDep("a")}})
	rec := &recorder{resp: jsonResponse(200, backgroundReply("resp_bgs", "queued", ""))}
	resp := e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"think","background":true}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	require.Empty(t, e.acct.Records())

	stream := "event: response.in_progress\ndata: {\"type\":\"response.in_progress\",\"sequence_number\":3,\"response\":{\"id\":\"resp_bgs\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-4o-2024\",\"output\":[]}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":4,\"response\":{\"id\":\"resp_bgs\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-4o-2024\",\"output\":[],\"usage\":{\"input_tokens\":5,\"output_tokens\":8,\"total_tokens\":13}}}\n\n"
	rec.resp = sseResponse(stream, 9)
	resp = e.do(t, get("/v1/responses/resp_bgs?stream=true&starting_after=2", clientKey), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	require.Equal(t, "/v1/responses/resp_bgs?stream=true&starting_after=2", rec.last(t).Headers.Value(":path"))
	require.NotContains(t, string(resp.Body), "gpt-4o-2024")
	require.Equal(t, 2, strings.Count(string(resp.Body), `"model":"gpt"`), "%s", resp.Body)
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, kernel.Usage{Input: 5, Output: 8}, recs[0].Usage)
}

// TestBackgroundPollerSettlesUnpolled (issue 37): a background response
// nobody polls is settled by the gateway's poller through SettleBackground
// from its provider's answer — once, from its usage, when finished; nothing
// while it runs; a response the provider no longer knows is settled from
// the input estimated at its POST. The settlement kept at the POST carries
// the reservation's hold (scopes, bound, lease end) for restoreHolds.
func TestBackgroundPollerSettlesUnpolled(t *testing.T) {
	owners := &memOwners{}
	e, _ := routedEnvWith(t, []Option{WithResponseOwners(owners)},
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{nativeDep("a")}})
	rec := &recorder{resp: jsonResponse(200, backgroundReply("resp_u1", "queued", ""))}
	resp := e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"think hard","background":true,"max_output_tokens":50}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	postID := resp.Headers.Value(hdrRequestID)
	h := owners.holds["resp_u1"]
	require.NotNil(t, h)
	admit := e.acct.Admits()[0]
	require.Len(t, h.Scopes, len(admit.Scopes))
	require.Equal(t, admit.Scopes[0].Ref, h.Scopes[0])
	require.Equal(t, admit.PromptBytes, h.PromptBytes)
	require.Positive(t, h.MaxTokens)
	require.Equal(t, e.proc.now().Add(DefaultBackgroundLease), h.Until)

	o, err := owners.ResponseOwner(t.Context(), "resp_u1")
	require.NoError(t, err)
	require.False(t, e.proc.SettleBackground(t.Context(), o, 200, []byte(backgroundReply("resp_u1", "in_progress", ""))))
	require.False(t, e.proc.SettleBackground(t.Context(), o, 502, []byte(`{}`)), "a provider error: next time")
	require.Empty(t, e.acct.Records())
	done := []byte(backgroundReply("resp_u1", "completed", `{"input_tokens":30,"output_tokens":70,"total_tokens":100}`))
	require.True(t, e.proc.SettleBackground(t.Context(), o, 200, done))
	require.True(t, e.proc.SettleBackground(t.Context(), o, 200, done), "ended; already settled")
	recs := e.acct.Records()
	require.Len(t, recs, 1, "settled once")
	require.Equal(t, postID, recs[0].RequestID)
	require.Equal(t, kernel.Usage{Input: 30, Output: 70}, recs[0].Usage)
	require.Equal(t, kernel.StatusCompleted, recs[0].Status)

	// Unknown to its provider: charged the input estimated at the POST.
	rec.resp = jsonResponse(200, backgroundReply("resp_u2", "queued", ""))
	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"gone","background":true}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	o, err = owners.ResponseOwner(t.Context(), "resp_u2")
	require.NoError(t, err)
	require.True(t, e.proc.SettleBackground(t.Context(), o, 404, []byte(`{"error":{}}`)))
	recs = e.acct.Records()
	require.Len(t, recs, 2)
	require.Equal(t, kernel.StatusAborted, recs[1].Status)
	require.Positive(t, recs[1].Usage.Input)
	require.Zero(t, recs[1].Usage.Output)
}
