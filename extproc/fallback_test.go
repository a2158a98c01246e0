package extproc

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// Refusals as providers word them (routing.go's markers).
const (
	contextWindowRefusal = `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
	contentPolicyRefusal = `{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`
	clientsOwnRefusal    = `{"error":{"message":"bad temperature","type":"invalid_request_error","param":"temperature","code":null}}`
)

// fallbackGroups: a group of one OpenAI deployment whose context-window
// refusals go to another OpenAI group and content-policy refusals to an
// Anthropic group.
func fallbackGroups() []*routing.Group {
	return []*routing.Group{
		{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{openAIDep("gpt", "small")}, ContextWindowFallbacks: []string{"big"}, ContentPolicyFallbacks: []string{"claude"}},
		{Name: "big", Retries: 2, Deployments: []*routing.Deployment{openAIDep("big", "big")}},
		{Name: "claude", Retries: 2, Deployments: []*routing.Deployment{anthropicDep("claude", "anthropic")}},
	}
}

// TestFallbackRedirectOnPerTryRoutes: through the per-try router as Envoy
// runs it (a try's redirect followed by the route's internal redirect
// policy, the recreated request through the router-level filter again), a
// context-window refusal is served by the context_window_fallbacks group
// and a content-policy refusal by the content_policy_fallbacks group
// (translated for Anthropic), for OpenAI and Anthropic clients, streamed
// and not; each request has two ledger rows, the refused try at $0 with
// its 400. The client's own 400 reaches it unchanged.
func TestFallbackRedirectOnPerTryRoutes(t *testing.T) {
	e, _, rt, up := perTryEnv(t, fallbackGroups()...)
	chatStream := `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	msgs := `{"model":"gpt","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	msgsStream := `{"model":"gpt","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	openAI := map[bool]func() *extprocfiltertest.UpstreamResponse{
		false: func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, chatOK) },
		true:  func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.OpenAIStream, 11) },
	}
	anthropic := map[bool]func() *extprocfiltertest.UpstreamResponse{
		false: func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) },
		true:  func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.NativeStream, 9) },
	}
	rows := 0
	for _, refusal := range []struct{ name, body, served string }{
		{"context-window", contextWindowRefusal, "big"},
		{"content-policy", contentPolicyRefusal, "anthropic"},
	} {
		for _, c := range []struct {
			path, body, want string
			stream           bool
		}{
			{"/v1/chat/completions", chatBody, `"chat.completion"`, false},
			{"/v1/chat/completions", chatStream, "chat.completion.chunk", true},
			{"/v1/messages", msgs, `"type":"message"`, false},
			{"/v1/messages", msgsStream, "message_stop", true},
		} {
			t.Run(refusal.name+c.path+"/stream="+strconv.FormatBool(c.stream), func(t *testing.T) {
				up.answer["small"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(400, refusal.body) }
				up.answer["big"], up.answer["anthropic"] = openAI[c.stream], anthropic[c.stream]
				rt.tries = nil
				got := rt.do(t, post(c.path, clientKey, c.body))
				require.Equal(t, 200, got.Status, string(got.Body))
				require.Equal(t, refusal.served, got.Headers.Value(hdrDeployment))
				require.Equal(t, "2", got.Headers.Value(hdrAttempts))
				require.Contains(t, string(got.Body), c.want)
				require.Equal(t, []string{"small", refusal.served}, rt.tries, "the refused try, then the fallback's plain route")
				fwd := got.Forwarded.Headers
				require.Equal(t, refusal.served, fwd.Value(RouteHeader))
				require.Empty(t, fwd.Value(hdrRetry), "the token does not go upstream")
				require.Empty(t, fwd.Value(envoy.ReservedHeader))
				require.NotContains(t, fwd.Value("authorization"), clientKey, "the client's key does not go upstream")
				require.NotContains(t, fwd.Value("x-api-key"), clientKey)
				require.Equal(t, strconv.Itoa(len(got.Forwarded.Body)), fwd.Value("content-length"), "the failed try's content-length is not kept")

				rows += 2
				recs := e.acct.waitRecords(t, rows)
				failed, served := recs[rows-2], recs[rows-1]
				require.Equal(t, "small", failed.Deployment)
				require.Equal(t, kernel.StatusFailed, failed.Status)
				require.Equal(t, 400, failed.HTTPStatus)
				require.Equal(t, kernel.Usage{}, failed.Usage, "the refused try is $0")
				require.Equal(t, refusal.served, served.Deployment)
				require.Equal(t, kernel.StatusCompleted, served.Status)
				require.True(t, strings.HasPrefix(served.RequestID, failed.RequestID+"-2-"), served.RequestID)
			})
		}
	}

	t.Run("the client's own 400", func(t *testing.T) {
		up.answer["small"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(400, clientsOwnRefusal) }
		rt.tries = nil
		got := rt.do(t, post("/v1/chat/completions", clientKey, chatBody))
		require.Equal(t, 400, got.Status)
		require.Contains(t, string(got.Body), "bad temperature")
		require.Empty(t, got.Headers.Value("location"))
		require.Empty(t, got.Headers.Value(hdrRetry))
		require.Equal(t, []string{"small"}, rt.tries)
		require.Zero(t, rt.followed)
	})
}

// TestFallbackRedirectRestoresTheClientsRequest: the try's redirect carries
// what Envoy's router needs to rebuild the client's request from the
// header map the try changed: the status and an absolute location with the
// client's path, the token, the client's own credentials (the copy removes
// the provider's) and nothing of a header the client did not send.
func TestFallbackRedirectRestoresTheClientsRequest(t *testing.T) {
	e, _, rt, up := perTryEnv(t, fallbackGroups()...)
	up.answer["small"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(400, contextWindowRefusal) }
	var redirect *extprocfiltertest.Response
	tryUp := func(req *extprocfiltertest.ForwardedRequest) *extprocfiltertest.UpstreamResponse {
		resp := rt.upstream(req)
		if rt.recreated != nil && redirect == nil {
			redirect = &extprocfiltertest.Response{Headers: rt.recreated.Headers}
		}
		return resp
	}
	rt.followed, rt.recreated = 0, nil
	first := e.do(t, post("/v1/messages", clientKey, `{"model":"gpt","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`), tryUp)
	require.Zero(t, first.Status)
	require.NotNil(t, redirect)
	h := redirect.Headers
	require.Equal(t, "/v1/messages", h.Value(":path"), "the client's path, not the provider's")
	require.Equal(t, "https", h.Value(":scheme"))
	require.Equal(t, "gateway.local", h.Value(":authority"))
	require.Equal(t, "Bearer "+clientKey, h.Value("authorization"), "the client's credential restored")
	require.Empty(t, h.Value("x-api-key"), "the client sent none")
	require.NotEmpty(t, h.Value(hdrRetry))
	require.Equal(t, "small", h.Value(RouteHeader), "the router's map as the try left it")
}

// TestStrictBudgetRefusesAnExpensiveContextWindowFallback: the redirected
// request is admitted afresh at the fallback's price; a strict budget that
// cannot cover its worst case refuses it and nothing is overspent.
func TestStrictBudgetRefusesAnExpensiveContextWindowFallback(t *testing.T) {
	dear := openAIDep("dear", "dear")
	dear.Target.Price = kernel.Price{Input: 100 * kernel.Dollar, Output: 100 * kernel.Dollar}
	e, _, rt, up := perTryEnv(t,
		&routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{openAIDep("gpt", "cheap")}, ContextWindowFallbacks: []string{"dear"}},
		&routing.Group{Name: "dear", Deployments: []*routing.Deployment{dear}},
	)
	e.cat.keys[clientKey].Scopes[0].Limits = &kernel.Limits{
		Shortfall: kernel.Reject,
		Budgets:   []kernel.BudgetWindow{{Limit: kernel.Dollar / 1000, Period: kernel.Period{Kind: kernel.PeriodDaily}}},
	}
	up.answer["cheap"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(400, contextWindowRefusal) }
	got := rt.do(t, post("/v1/chat/completions", clientKey, chatBody))
	require.Equal(t, 1, rt.followed, "the fallback is tried")
	require.Equal(t, 400, got.Status, string(got.Body))
	require.Contains(t, string(got.Body), "budget_exceeded")
	require.Zero(t, up.count("dear"), "never sent: its worst case is over the budget")
	admits := e.acct.Admits()
	require.Len(t, admits, 2)
	require.Equal(t, dear.Target.Price, admits[1].Price, "priced for the fallback")
	recs := e.acct.waitRecords(t, 1)
	require.Equal(t, "cheap", recs[0].Deployment)
	require.Equal(t, kernel.Usage{}, recs[0].Usage)
}

// TestFallbackRedirectIsReportedAsAFallback: the recreated request's report
// says it fell back from the group asked for, for a context-window refusal
// (tollgate_fallbacks_total's reason), and retries the refused try.
func TestFallbackRedirectIsReportedAsAFallback(t *testing.T) {
	obs := &reports{}
	groups := fallbackGroups()
	e, _ := routedEnvWith(t, []Option{WithPerTry(), WithObserver(obs)}, groups...)
	up := newByDeployment()
	rt := newTryRouter(t, e, up, groups...)
	up.answer["small"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(400, contextWindowRefusal) }
	require.Equal(t, 200, rt.do(t, post("/v1/chat/completions", clientKey, chatBody)).Status)
	var fell *Report
	require.Eventually(t, func() bool {
		for _, r := range obs.all() {
			if r.FallbackFrom != "" {
				fell = &r
				return true
			}
		}
		return false
	}, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, "gpt", fell.FallbackFrom)
	require.Equal(t, routing.FallbackContextWindow, fell.FallbackReason)
	require.Equal(t, "big", fell.Target.Model)
	require.NotNil(t, fell.RetryOf)
	require.Equal(t, Try{Group: "gpt", Deployment: "small", Status: 400}, *fell.RetryOf)
}
