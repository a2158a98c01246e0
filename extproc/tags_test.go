package extproc

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

func tagsHeader(v string) extprocfilter.Header { return extprocfilter.Header{Key: hdrTags, Value: v} }

func TestTagsAttributeSpend(t *testing.T) {
	// The key's default tags, the body's metadata.tollgate_tags and the
	// header: a later source wins for a name; the ledger record has them all.
	e := newTestEnv(t)
	e.cat.keys[clientKey].Tags = []string{"env=dev", "team=search"}
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	for _, tc := range []struct {
		name, body, hdr string
		want            []string
	}{
		{"defaults", `{"model":"gpt-4o","messages":[]}`, "", []string{"env=dev", "team=search"}},
		{"header", `{"model":"gpt-4o","messages":[]}`, "feature=search, env=prod", []string{"env=prod", "feature=search", "team=search"}},
		{"metadata", `{"model":"gpt-4o","messages":[],"store":true,"metadata":{"tollgate_tags":"feature=chat,env=staging","other":"x"}}`, "", []string{"env=staging", "feature=chat", "team=search"}},
		{"header over metadata", `{"model":"gpt-4o","messages":[],"metadata":{"tollgate_tags":"feature=chat,env=staging"}}`, "env=prod", []string{"env=prod", "feature=chat", "team=search"}},
		{"the key elsewhere is no tag", `{"model":"gpt-4o","messages":[{"role":"user","content":"\"tollgate_tags\""}]}`, "", []string{"env=dev", "team=search"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var extra []extprocfilter.Header
			if tc.hdr != "" {
				extra = append(extra, tagsHeader(tc.hdr))
			}
			n := len(e.acct.Records())
			resp := e.do(t, post("/v1/chat/completions", clientKey, tc.body, extra...), up.upstream)
			require.Equal(t, 200, resp.Status, string(resp.Body))
			recs := e.acct.Records()
			require.Len(t, recs, n+1)
			require.Equal(t, tc.want, recs[n].Tags)
		})
	}
}

func TestTagBudgetStopsItsTraffic(t *testing.T) {
	// feature=search has half a cent: its requests stop at the budget, never
	// overspent; requests without the tag go on.
	e := newTestEnv(t)
	e.cat.keys[clientKey].Scopes[0].Limits = &kernel.Limits{Shortfall: kernel.Reject}
	tag := kernel.ScopeRef{Kind: kernel.ScopeTag, ID: "feature=search"}
	e.cat.tags = map[string]kernel.Scope{tag.ID: {Ref: tag, Limits: &kernel.Limits{
		Budgets: []kernel.BudgetWindow{{Limit: kernel.Cent / 2, Period: kernel.Period{Kind: kernel.PeriodMonthly}}},
	}}}
	body := `{"model":"gpt-4o","max_tokens":100,"messages":[]}`
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	passed, refused := 0, 0
	for range 40 {
		resp := e.do(t, post("/v1/chat/completions", clientKey, body, tagsHeader("feature=search,env=prod")), up.upstream)
		if resp.LocalReply != nil {
			requireOpenAIError(t, resp, wantError{400, "budget_exceeded", "budget_exceeded", "", "Budget exceeded for the tag feature=search."})
			refused++
			continue
		}
		require.Zero(t, refused, "once refused, the tag stays refused")
		passed++
	}
	require.Positive(t, passed)
	require.Positive(t, refused)
	var spent kernel.Money
	for _, r := range e.acct.Records() {
		require.Equal(t, []string{"env=prod", "feature=search"}, r.Tags)
		spent += kernel.Cost(testPrice, r.Usage)
	}
	require.LessOrEqual(t, spent, kernel.Cent/2, "the tag's budget is never overspent")
	for _, h := range []string{"feature=chat", ""} {
		var extra []extprocfilter.Header
		if h != "" {
			extra = append(extra, tagsHeader(h))
		}
		resp := e.do(t, post("/v1/chat/completions", clientKey, body, extra...), up.upstream)
		require.Equal(t, 200, resp.Status, "tags %q: no budget of feature=search", h)
	}
}

func TestMalformedTags(t *testing.T) {
	e := newTestEnv(t)
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	chat := `{"model":"gpt-4o","messages":[]}`
	for _, tc := range []struct {
		name, hdr, body, param, msg string
	}{
		{"no value", "feature", chat, "", `"feature" is not name=value`},
		{"space in a value", "feature=se arch", chat, "", "printable ASCII"},
		{"twice", "a=1,a=2", chat, "", "a is given twice"},
		{"too many", "a=1,b=1,c=1,d=1,e=1,f=1,g=1,h=1,i=1,j=1,k=1,l=1,m=1,n=1,o=1,p=1,q=1", chat, "", "17 tags, at most 16"},
		{"metadata not a string", "", `{"model":"gpt-4o","messages":[],"metadata":{"tollgate_tags":["a=1"]}}`, "metadata.tollgate_tags", "must be a string"},
		{"metadata malformed", "", `{"model":"gpt-4o","messages":[],"metadata":{"tollgate_tags":"a b=1"}}`, "metadata.tollgate_tags", "may hold only letters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var extra []extprocfilter.Header
			if tc.hdr != "" {
				extra = append(extra, tagsHeader(tc.hdr))
			}
			resp := e.do(t, post("/v1/chat/completions", clientKey, tc.body, extra...), up.upstream)
			requireOpenAIError(t, resp, wantError{400, translate.TypeInvalidRequest, "invalid_tags", tc.param, tc.msg})
		})
	}
	require.Empty(t, up.got, "nothing went upstream")
	require.Empty(t, e.acct.Records(), "nothing was charged")

	// On /v1/messages the error is Anthropic's.
	a := anthropicEnv(t)
	resp := a.do(t, post("/v1/messages", clientKey, `{"model":"claude-sonnet","max_tokens":10,"messages":[]}`, tagsHeader("=x")), up.upstream)
	require.Equal(t, 400, resp.Status)
	var body struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &body), string(resp.Body))
	require.Equal(t, "error", body.Type)
	require.Equal(t, "invalid_request_error", body.Error.Type)
	require.Contains(t, body.Error.Message, "x-tollgate-tags header must be name=value pairs")
}
