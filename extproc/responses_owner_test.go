package extproc

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/ownership"
	"github.com/tollgate-ai/tollgate/routing"
)

// memOwners is an in-memory ResponseOwners, filled from the settled records
// as the gateway's accountant does (take).
type memOwners struct {
	mu      sync.Mutex
	m       map[string]ResponseOwner
	pending map[string]Record
	holds   map[string]*ownership.Hold
	failPut error // PutOwner fails with it
}

func (m *memOwners) PutOwner(_ context.Context, o *ResponseOwner, d *Deferred) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failPut != nil {
		return m.failPut
	}
	if m.m == nil {
		m.m, m.pending, m.holds = map[string]ResponseOwner{}, map[string]Record{}, map[string]*ownership.Hold{}
	}
	if _, ok := m.m[o.ID]; !ok {
		r := *o
		m.m[o.ID] = r
		if d != nil {
			r.Pending = true
			m.m[o.ID], m.pending[o.ID], m.holds[o.ID] = r, *d.Record, d.Hold
		}
	}
	return nil
}

func (m *memOwners) ClaimSettlement(_ context.Context, id string) (*Deferred, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.pending[id]
	if !ok {
		return nil, ErrResponseNotFound
	}
	delete(m.pending, id)
	o := m.m[id]
	o.Pending = false
	m.m[id] = o
	return &Deferred{Record: &rec, Hold: m.holds[id]}, nil
}

func (m *memOwners) ResponseOwner(_ context.Context, id string) (*ResponseOwner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.m[id]
	if !ok {
		return nil, ErrResponseNotFound
	}
	return &o, nil
}

func (m *memOwners) ForgetResponse(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[id]; !ok {
		return ErrResponseNotFound
	}
	delete(m.m, id)
	return nil
}

// take records the owners the records carry.
func (m *memOwners) take(recs []Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]ResponseOwner{}
	}
	for _, r := range recs {
		if r.Owner != nil {
			if _, ok := m.m[r.Owner.ID]; !ok {
				m.m[r.Owner.ID] = *r.Owner
			}
		}
	}
}

func nativeDep(id string) *routing.Deployment {
	d := openAIDep("gpt", id)
	d.Target.NativeResponses = true
	return d
}

func nativeReply(id string) string {
	return `{"id":"` + id + `","object":"response","created_at":1,"status":"completed","model":"gpt-4o","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}`
}

// TestNativeResponseOwnership: on a native group of two deployments the id a
// response hands out is recorded for its key and deployment;
// previous_response_id lands on that deployment every time, another key's
// or an unknown id is a 404 before admission; GET, input_items and DELETE
// are forwarded to that deployment with its credential, another key gets
// 404; a deployment cooling down is a 503, not a re-route.
func TestNativeResponseOwnership(t *testing.T) {
	owners := &memOwners{}
	e, clk := routedEnvWith(t, []Option{WithResponseOwners(owners)},
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
	resp := e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"hi"}`), up.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	dep := resp.Headers.Value(hdrDeployment)
	other := map[string]string{"a": "b", "b": "a"}[dep]
	first := "resp_" + dep + "x"
	owners.take(e.acct.Records())
	o, err := owners.ResponseOwner(t.Context(), first)
	require.NoError(t, err, "the id handed out is recorded at settlement")
	require.Equal(t, ResponseOwner{ID: first, KeyID: "k1", Deployment: dep, Model: "gpt", Store: true, Run: first}, *o, "a response of no run starts one of its own")

	// Three turns chained: all on the deployment holding the chain.
	prev := first
	for range 3 {
		resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"more","previous_response_id":"`+prev+`"}`), up.upstream)
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		require.Equal(t, dep, resp.Headers.Value(hdrDeployment))
		owners.take(e.acct.Records())
		var r struct{ ID string }
		require.NoError(t, json.Unmarshal(resp.Body, &r))
		require.NotEqual(t, prev, r.ID)
		prev = r.ID
	}
	require.Equal(t, 4, up.got[dep])
	require.Zero(t, up.got[other])

	// Another key, or an unknown id: 404 before anything is admitted.
	admits := len(e.acct.Admits())
	for _, c := range []struct{ key, id string }{{otherKey, first}, {clientKey, "resp_unknown"}} {
		resp = e.do(t, post("/v1/responses", c.key, `{"model":"gpt","input":"x","previous_response_id":"`+c.id+`"}`), up.upstream)
		require.Equal(t, 404, resp.Status, "%s", resp.Body)
		require.Contains(t, string(resp.Body), `"code":"previous_response_not_found"`)
		require.Nil(t, resp.Forwarded)
	}
	require.Len(t, e.acct.Admits(), admits)

	// GET, input_items, DELETE: forwarded to the deployment, with its key.
	rec := &recorder{resp: jsonResponse(200, nativeReply(first))}
	for _, r := range []struct {
		req  *extprocfiltertest.Request
		path string
	}{
		{get("/v1/responses/"+first, clientKey), "/v1/responses/" + first},
		{get("/v1/responses/"+first+"/input_items?order=asc", clientKey), "/v1/responses/" + first + "/input_items?order=asc"},
	} {
		resp = e.do(t, r.req, rec.upstream)
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		f := rec.last(t)
		require.Equal(t, dep, f.Headers.Value(RouteHeader))
		require.Equal(t, r.path, f.Headers.Value(":path"))
		require.Equal(t, "Bearer "+openAIKey, f.Headers.Value("authorization"))
		require.Equal(t, dep, resp.Headers.Value(hdrDeployment))
	}
	calls := len(rec.got)
	for _, r := range []*extprocfiltertest.Request{get("/v1/responses/"+first, otherKey), del("/v1/responses/"+first, otherKey), get("/v1/responses/"+first+"/input_items", otherKey)} {
		resp = e.do(t, r, rec.upstream)
		require.Equal(t, 404, resp.Status, "%s", resp.Body)
		require.Contains(t, string(resp.Body), "Response with id '"+first+"' not found.")
	}
	require.Len(t, rec.got, calls, "another key's request never reaches the provider")

	// The deployment cools down: 503, the conversation is not re-routed.
	var holder *routing.Deployment
	for _, d := range e.proc.cat.(*groupCatalog).groups["gpt"].Deployments {
		if d.Target.Deployment == dep {
			holder = d
		}
	}
	e.proc.router.Observe(holder, 429, time.Minute, 0, clk.now())
	resp = e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"x","previous_response_id":"`+first+`"}`), up.upstream)
	require.Equal(t, 503, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "cooling down")
	require.NotEmpty(t, resp.Headers.Value("retry-after"))
	resp = e.do(t, get("/v1/responses/"+first, clientKey), rec.upstream)
	require.Equal(t, 503, resp.Status, "%s", resp.Body)
	require.Zero(t, up.got[other])
	clk.advance(2 * time.Minute)

	// DELETE forgets the id once the provider deleted it.
	rec.resp = jsonResponse(200, `{"id":"`+first+`","object":"response","deleted":true}`)
	resp = e.do(t, del("/v1/responses/"+first, clientKey), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	require.Equal(t, "DELETE", rec.last(t).Headers.Value(":method"))
	_, err = owners.ResponseOwner(t.Context(), first)
	require.ErrorIs(t, err, ErrResponseNotFound)
}

// TestNativeResponseStreamOwner: a stream's id is read from its
// response.created event, split anywhere.
func TestNativeResponseStreamOwner(t *testing.T) {
	owners := &memOwners{}
	e, _ := routedEnvWith(t, []Option{WithResponseOwners(owners)},
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{nativeDep("a")}})
	stream := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_s1\",\"object\":\"response\",\"status\":\"in_progress\",\"model\":\"gpt-4o\",\"output\":[]}}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_s1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-4o\",\"output\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1,\"total_tokens\":4}}}\n\n"
	rec := &recorder{resp: sseResponse(stream, 7)}
	resp := e.do(t, post("/v1/responses", clientKey, `{"model":"gpt","input":"hi","stream":true,"background":false,"store":false}`), rec.upstream)
	require.Equal(t, 200, resp.Status, "%s", resp.Body)
	owners.take(e.acct.Records())
	o, err := owners.ResponseOwner(t.Context(), "resp_s1")
	require.NoError(t, err)
	require.Equal(t, ResponseOwner{ID: "resp_s1", KeyID: "k1", Deployment: "a", Model: "gpt", Run: "resp_s1"}, *o)
}
