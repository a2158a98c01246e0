package extproc

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
)

// runOfAdmission is the run scope the last admission reserved on ("" when
// none).
func runOfAdmission(e *testEnv) string {
	admits := e.acct.Admits()
	for _, sc := range admits[len(admits)-1].Scopes {
		if sc.Ref.Kind == kernel.ScopeRun {
			return sc.Ref.ID
		}
	}
	return ""
}

// TestPreviousResponseChainIsARun (issue 36): on a translated provider a
// chain of responses linked by previous_response_id is one run. The first
// response, of no run, starts a run named by its id: it is stored with it
// and its ledger row names it (it was admitted before its id existed). Each
// continuation — served here by another processor on the same store, as
// another replica or the next process would — is admitted in that run and
// stored with it; an x-tollgate-run-id header wins over the chain's.
func TestPreviousResponseChainIsARun(t *testing.T) {
	rs := &memResponses{}
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}
	chat := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}`
	up := &recorder{resp: jsonResponse(200, chat)}
	turn := func(e *testEnv, prev string, headers ...extprocfilter.Header) (id string, rec Record) {
		t.Helper()
		body := `{"model":"gpt-4o","input":"next"}`
		if prev != "" {
			body = `{"model":"gpt-4o","input":"next","previous_response_id":"` + prev + `"}`
		}
		n := len(e.acct.Records())
		resp := e.do(t, post("/v1/responses", clientKey, body, headers...), up.upstream)
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		var r struct{ ID string }
		require.NoError(t, json.Unmarshal(resp.Body, &r))
		return r.ID, e.acct.waitRecords(t, n+1)[n]
	}

	stored := func(id string) *StoredResponse {
		t.Helper()
		sr, err := rs.GetResponse(t.Context(), "k1", id)
		require.NoError(t, err)
		return sr
	}
	first, rec := turn(newTestEnv(t, WithResponseStore(rs)), "")
	require.Equal(t, first, stored(first).Run, "a response of no run starts one named by its id")
	chain := kernel.RunScopeID(key, first)
	require.Equal(t, chain, rec.RunID, "the chain's first ledger row names the run")

	prev := first
	for i := range 2 {
		e := newTestEnv(t, WithResponseStore(rs)) // another replica, or a restart
		id, rec := turn(e, prev)
		require.Equal(t, chain, runOfAdmission(e), "turn %d is admitted in the chain's run", i+2)
		require.Equal(t, chain, rec.RunID)
		require.Equal(t, first, stored(id).Run, "and stored with it")
		prev = id
	}

	e := newTestEnv(t, WithResponseStore(rs))
	id, rec := turn(e, prev, extprocfilter.Header{Key: hdrRunID, Value: "loop-9"})
	require.Equal(t, kernel.RunScopeID(key, "loop-9"), runOfAdmission(e), "the header names the run")
	require.Equal(t, kernel.RunScopeID(key, "loop-9"), rec.RunID)
	require.Equal(t, "loop-9", stored(id).Run, "its continuations are in loop-9")

	// A response stored before runs were (no run): its continuation's run
	// starts at it.
	old := *stored(first)
	old.ID, old.Run = "resp_old", ""
	require.NoError(t, rs.PutResponse(t.Context(), &old))
	e = newTestEnv(t, WithResponseStore(rs))
	turn(e, "resp_old")
	require.Equal(t, kernel.RunScopeID(key, "resp_old"), runOfAdmission(e))
}

// TestNativeResponseChainIsARun: the same on a native provider, the run kept
// with each id's owner (written with the ledger row).
func TestNativeResponseChainIsARun(t *testing.T) {
	owners := &memOwners{}
	e, _ := routedEnvWith(t, []Option{WithResponseOwners(owners)},
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{nativeDep("a")}})
	key := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}
	n := 0
	up := newByDeployment()
	up.answer["a"] = func() *extprocfiltertest.UpstreamResponse {
		n++
		return jsonResponse(200, nativeReply("resp_n"+strconv.Itoa(n)))
	}
	turn := func(prev string) (Record, string) {
		t.Helper()
		body := `{"model":"gpt","input":"next"}`
		if prev != "" {
			body = `{"model":"gpt","input":"next","previous_response_id":"` + prev + `"}`
		}
		k := len(e.acct.Records())
		resp := e.do(t, post("/v1/responses", clientKey, body), up.upstream)
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		rec := e.acct.waitRecords(t, k+1)[k]
		owners.take([]Record{rec})
		return rec, runOfAdmission(e)
	}
	rec, admitted := turn("")
	require.Empty(t, admitted, "the first response's id does not exist at admission")
	chain := kernel.RunScopeID(key, "resp_n1")
	require.Equal(t, chain, rec.RunID)
	require.Equal(t, "resp_n1", rec.Owner.Run)
	for i, prev := range []string{"resp_n1", "resp_n2"} {
		rec, admitted = turn(prev)
		require.Equal(t, chain, admitted, "turn %d", i+2)
		require.Equal(t, chain, rec.RunID)
		require.Equal(t, "resp_n1", rec.Owner.Run, "the owner of %s keeps the chain's run", rec.Owner.ID)
	}
}
