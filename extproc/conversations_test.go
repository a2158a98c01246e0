package extproc

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// TestConversationOwnership (issue 37): a conversation created through the
// gateway on a native group is the key's, held by the deployment that made
// it: its calls go there with the deployment's credential, a response made
// in it lands there every time, another key (or an id never handed out)
// gets 404 before anything reaches the provider, and a DELETE of it forgets
// it (a DELETE of one of its items does not).
func TestConversationOwnership(t *testing.T) {
	owners := &memOwners{}
	e, _ := routedEnvWith(t, []Option{WithResponseOwners(owners)},
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{nativeDep("a"), nativeDep("b")}})
	e.cat.allowed["k2"] = append(e.cat.allowed["k2"], "gpt")
	up := newByDeployment()
	n := 0
	for _, d := range []string{"a", "b"} {
		up.answer[d] = func() *extprocfiltertest.UpstreamResponse {
			n++
			return jsonResponse(200, nativeReply("resp_"+d+strings.Repeat("x", n)))
		}
	}
	rec := &recorder{resp: jsonResponse(200, `{"id":"conv_1","object":"conversation","created_at":1,"metadata":{}}`)}
	resp := e.do(t, post("/v1/conversations", clientKey, `{"metadata":{"topic":"x"}}`, extprocfilter.Header{Key: "x-tollgate-model", Value: "gpt"}), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	f := rec.last(t)
	dep := f.Headers.Value(RouteHeader)
	require.Contains(t, []string{"a", "b"}, dep)
	require.Equal(t, "/v1/conversations", f.Headers.Value(":path"))
	require.Equal(t, "Bearer "+openAIKey, f.Headers.Value("authorization"))
	require.JSONEq(t, `{"metadata":{"topic":"x"}}`, string(f.Body))
	o, err := owners.ResponseOwner(t.Context(), "conv_1")
	require.NoError(t, err)
	require.Equal(t, ResponseOwner{ID: "conv_1", KeyID: "k1", Deployment: dep, Model: "gpt", Store: true}, *o)
	require.Empty(t, e.acct.Admits(), "not charged")

	// Its calls: forwarded to the holder, the path as the provider spells it.
	for _, r := range []struct {
		req  *extprocfiltertest.Request
		path string
	}{
		{get("/v1/conversations/conv_1", clientKey), "/v1/conversations/conv_1"},
		{post("/v1/conversations/conv_1", clientKey, `{"metadata":{}}`), "/v1/conversations/conv_1"},
		{get("/v1/conversations/conv_1/items?order=asc", clientKey), "/v1/conversations/conv_1/items?order=asc"},
		{post("/v1/conversations/conv_1/items", clientKey, `{"items":[]}`), "/v1/conversations/conv_1/items"},
		{del("/v1/conversations/conv_1/items/msg_1", clientKey), "/v1/conversations/conv_1/items/msg_1"},
	} {
		resp = e.do(t, r.req, rec.upstream)
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		f := rec.last(t)
		require.Equal(t, dep, f.Headers.Value(RouteHeader))
		require.Equal(t, r.path, f.Headers.Value(":path"))
		require.Equal(t, dep, resp.Headers.Value(hdrDeployment))
	}
	_, err = owners.ResponseOwner(t.Context(), "conv_1")
	require.NoError(t, err, "deleting an item keeps the conversation")

	// Another key, or an unknown id: 404, nothing reaches the provider.
	calls := len(rec.got)
	for _, r := range []*extprocfiltertest.Request{
		get("/v1/conversations/conv_1", otherKey), del("/v1/conversations/conv_1", otherKey),
		get("/v1/conversations/conv_1/items", otherKey), post("/v1/conversations/conv_1/items", otherKey, `{"items":[]}`),
		get("/v1/conversations/conv_unknown", clientKey),
	} {
		resp = e.do(t, r, rec.upstream)
		require.Equal(t, 404, resp.Status, "%s", resp.Body)
		require.Contains(t, string(resp.Body), "Conversation with id '")
	}
	require.Len(t, rec.got, calls)

	// Responses in it land on the holder; another key's or an unknown
	// conversation is refused before admission.
	for _, conv := range []string{`"conv_1"`, `{"id":"conv_1"}`, `"conv_1"`} {
		resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"more","conversation":`+conv+`}`), up.upstream)
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		require.Equal(t, dep, resp.Headers.Value(hdrDeployment))
	}
	other := map[string]string{"a": "b", "b": "a"}[dep]
	require.Equal(t, 3, up.count(dep))
	require.Zero(t, up.count(other))
	admits := len(e.acct.Admits())
	for _, c := range []struct{ key, conv string }{{otherKey, "conv_1"}, {clientKey, "conv_unknown"}} {
		resp = e.do(t, post("/v1/responses", c.key, `{"model":"gpt","input":"x","conversation":"`+c.conv+`"}`), up.upstream)
		require.Equal(t, 404, resp.Status, "%s", resp.Body)
		require.Contains(t, string(resp.Body), `"param":"conversation"`)
	}
	require.Len(t, e.acct.Admits(), admits)

	// DELETE forgets it once the provider deleted it.
	rec.resp = jsonResponse(200, `{"id":"conv_1","object":"conversation.deleted","deleted":true}`)
	resp = e.do(t, del("/v1/conversations/conv_1", clientKey), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	_, err = owners.ResponseOwner(t.Context(), "conv_1")
	require.ErrorIs(t, err, ErrResponseNotFound)

	// Without x-tollgate-model: the key's only native group; none or
	// several is a 400 naming the header.
	resp = e.do(t, post("/v1/conversations", clientKey, `{}`), rec.upstream)
	require.Equal(t, 400, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "x-tollgate-model")
	e.cat.targets = map[string]*translate.Target{"gpt": nativeDep("a").Target, "chat": openAIDep("chat", "c").Target}
	rec.resp = jsonResponse(200, `{"id":"conv_2","object":"conversation","created_at":1,"metadata":{}}`)
	resp = e.do(t, post("/v1/conversations", clientKey, `{}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	_, err = owners.ResponseOwner(t.Context(), "conv_2")
	require.NoError(t, err)
}

// TestConversationIsTheRun (issue 36): a Responses request in a
// conversation, naming no run, is admitted in the run of its conversation
// (every turn in one run scope); an x-tollgate-run-id header wins; a
// request outside any conversation has no run.
func TestConversationIsTheRun(t *testing.T) {
	owners := &memOwners{}
	e, _ := routedEnvWith(t, []Option{WithResponseOwners(owners)},
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{nativeDep("a")}})
	require.NoError(t, owners.PutOwner(t.Context(), &ResponseOwner{ID: "conv_r", KeyID: "k1", Deployment: "a", Model: "gpt", Store: true}, nil))
	rec := &recorder{resp: jsonResponse(200, nativeReply("resp_r1"))}
	runOf := func(req *extprocfiltertest.Request) string {
		t.Helper()
		resp := e.do(t, req, rec.upstream)
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		admits := e.acct.Admits()
		for _, sc := range admits[len(admits)-1].Scopes {
			if sc.Ref.Kind == kernel.ScopeRun {
				return sc.Ref.ID
			}
		}
		return ""
	}
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}
	for range 2 {
		require.Equal(t, kernel.RunScopeID(key, "conv_r"),
			runOf(post("/v1/responses", clientKey, `{"model":"gpt","input":"turn","conversation":"conv_r"}`)))
	}
	require.Equal(t, kernel.RunScopeID(key, "loop-7"),
		runOf(post("/v1/responses", clientKey, `{"model":"gpt","input":"turn","conversation":"conv_r"}`, extprocfilter.Header{Key: hdrRunID, Value: "loop-7"})))
	require.Empty(t, runOf(post("/v1/responses", clientKey, `{"model":"gpt","input":"alone"}`)))
}
