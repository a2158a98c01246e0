package extproc

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// doRetrying plays a data plane that retries as the processor says
// (docs/envoy.md, "Retries"): a response carrying the retry token is dropped
// and the client's request sent again with the token. It returns the final
// response and the delays asked for.
func (e *testEnv) doRetrying(t *testing.T, req *extprocfiltertest.Request, up extprocfiltertest.Upstream) (*extprocfiltertest.Response, []string) {
	t.Helper()
	var delays []string
	orig := req.Headers
	for range routing.MaxAttempts {
		got := e.do(t, req, up)
		tok := got.Headers.Value(hdrRetry)
		if tok == "" || got.LocalReply != nil {
			return got, delays
		}
		delays = append(delays, got.Headers.Value(hdrRetryDelay))
		r := *req
		r.Headers = append(append(extprocfilter.Headers{}, orig...), extprocfilter.Header{Key: hdrRetry, Value: tok})
		req = &r
	}
	t.Fatal("retried without end")
	return nil, nil
}

// TestRetryMovesToAnotherDeployment: an attempt that fails with a 500 is
// retried on the other deployment: the client gets the 200 with two
// attempts, the ledger has both (the failed one at $0, its deployment and
// status), each attempt its own reservation priced for its deployment.
func TestRetryMovesToAnotherDeployment(t *testing.T) {
	dead, ok := openAIDep("gpt", "dead"), openAIDep("gpt", "ok")
	dead.Weight = preferred
	e, _ := routedEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{dead, ok}})
	up := newByDeployment()
	up.answer["dead"] = failing(500)
	got, delays := e.doRetrying(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
	require.Equal(t, "2", got.Headers.Value(hdrAttempts))
	require.Len(t, delays, 1)
	require.Empty(t, got.Forwarded.Headers.Value(hdrRetry), "the token does not go upstream")

	recs := e.acct.waitRecords(t, 2)
	require.Equal(t, "dead", recs[0].Deployment)
	require.Equal(t, kernel.StatusFailed, recs[0].Status)
	require.Equal(t, 500, recs[0].HTTPStatus)
	require.Equal(t, kernel.Usage{}, recs[0].Usage, "the provider did not bill the failed attempt: $0")
	require.Equal(t, "ok", recs[1].Deployment)
	require.Equal(t, kernel.StatusCompleted, recs[1].Status)
	require.True(t, strings.HasPrefix(recs[1].RequestID, recs[0].RequestID+"-2-"), "the attempts of one request share its id: %s", recs[1].RequestID)
	require.Len(t, e.acct.Admits(), 2, "one reservation per attempt")
}

// TestDeadAndHealthyNoClientErrors: with retries, a dead deployment costs
// the clients nothing: 0 errors over 200 requests (without, 1 in 4 failed
// until the cooldown started).
func TestDeadAndHealthyNoClientErrors(t *testing.T) {
	dead, ok := openAIDep("gpt", "dead"), openAIDep("gpt", "ok")
	dead.AllowedFails, dead.Cooldown = 3, 30*time.Second
	e, _ := routedEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{dead, ok}})
	up := newByDeployment()
	up.answer["dead"] = failing(503)
	for range 200 {
		got, _ := e.doRetrying(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
		require.Equal(t, 200, got.Status, string(got.Body))
		require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
	}
	require.Equal(t, 3, up.count("dead"), "cooled down after allowed_fails")
}

// TestRetriesAreBounded: retries 0 gives the failure to the client; with
// every deployment failing, the attempts stop at 1 + retries.
func TestRetriesAreBounded(t *testing.T) {
	a, b, c := openAIDep("gpt", "a"), openAIDep("gpt", "b"), openAIDep("gpt", "c")
	zero := openAIDep("solo", "z1")
	e, _ := routedEnv(t,
		&routing.Group{Name: "gpt", Retries: 1, Deployments: []*routing.Deployment{a, b, c}},
		&routing.Group{Name: "solo", Retries: 0, Deployments: []*routing.Deployment{zero, openAIDep("solo", "z2")}},
	)
	up := newByDeployment()
	for _, d := range []string{"a", "b", "c", "z1", "z2"} {
		up.answer[d] = failing(502)
	}
	got, delays := e.doRetrying(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	require.Equal(t, 502, got.Status)
	require.Equal(t, "2", got.Headers.Value(hdrAttempts))
	require.Len(t, delays, 1)
	require.Equal(t, 2, up.count("a")+up.count("b")+up.count("c"), "each attempt on another deployment")

	got, delays = e.doRetrying(t, post("/v1/chat/completions", clientKey, strings.Replace(chatBody, `"gpt"`, `"solo"`, 1)), up.upstream)
	require.Equal(t, 502, got.Status)
	require.Empty(t, delays)
}

// TestRetryAfterIsHonouredAndCapped: a 429's retry-after sets the wait
// before the retry, up to maxRetryWait; the backoff grows with jitter.
func TestRetryAfterIsHonouredAndCapped(t *testing.T) {
	require.Equal(t, 300*time.Millisecond, routing.RetryDelay(1, 300*time.Millisecond))
	require.Equal(t, routing.MaxRetryWait, routing.RetryDelay(1, time.Hour))
	for n := 1; n <= 4; n++ {
		d := routing.RetryDelay(n, 0)
		base := routing.RetryBackoffBase << (n - 1)
		require.GreaterOrEqual(t, d, base/2)
		require.LessOrEqual(t, d, base)
	}
}

// TestStreamRetriedBeforeFirstByte: a streamed request whose first attempt
// fails before any byte (the data plane's 503 for a refused connection) is
// served by the other deployment as a stream.
func TestStreamRetriedBeforeFirstByte(t *testing.T) {
	dead, ok := openAIDep("gpt", "dead"), openAIDep("gpt", "ok")
	dead.Weight = preferred
	e, _ := routedEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{dead, ok}})
	up := newByDeployment()
	up.answer["dead"] = func() *extprocfiltertest.UpstreamResponse {
		return &extprocfiltertest.UpstreamResponse{
			Status: 503, Headers: extprocfilter.Headers{{Key: "content-type", Value: "text/plain"}},
			Chunks: [][]byte{[]byte("upstream connect error or disconnect/reset before headers. reset reason: remote connection failure")},
		}
	}
	up.answer["ok"] = func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.OpenAIStream, 7) }
	got, _ := e.doRetrying(t, post("/v1/chat/completions", clientKey, `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`), up.upstream)
	require.Equal(t, 200, got.Status)
	require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
	require.Equal(t, "2", got.Headers.Value(hdrAttempts))
	require.Contains(t, string(got.Body), "chat.completion.chunk")
}

// TestContextWindowAndContentPolicyFallbacks: a context-window refusal is
// retried on the group's context_window_fallbacks, a content-policy refusal
// on its content_policy_fallbacks (an Anthropic group: translated); other
// 400s are the client's.
func TestContextWindowAndContentPolicyFallbacks(t *testing.T) {
	small := openAIDep("gpt", "small")
	e, _ := routedEnv(t,
		&routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{small}, ContextWindowFallbacks: []string{"big"}, ContentPolicyFallbacks: []string{"claude"}},
		&routing.Group{Name: "big", Deployments: []*routing.Deployment{openAIDep("big", "big")}},
		&routing.Group{Name: "claude", Deployments: []*routing.Deployment{anthropicDep("claude", "anthropic")}},
	)
	up := newByDeployment()
	up.answer["anthropic"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) }
	for _, tc := range []struct{ body, served string }{
		{`{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, "big"},
		{`{"error":{"message":"Your request was rejected as a result of our safety system.","type":"invalid_request_error","param":null,"code":"content_policy_violation"}}`, "anthropic"},
		{`{"error":{"message":"bad temperature","type":"invalid_request_error","param":"temperature","code":null}}`, "small"},
	} {
		up.answer["small"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(400, tc.body) }
		got, _ := e.doRetrying(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
		require.Equal(t, tc.served, got.Headers.Value(hdrDeployment), string(got.Body))
		if tc.served == "small" {
			require.Equal(t, 400, got.Status)
			continue
		}
		require.Equal(t, 200, got.Status, string(got.Body))
		require.Contains(t, string(got.Body), `"chat.completion"`)
	}
}

// TestStrictBudgetRefusesAnExpensiveFallback: the retry's reservation is
// priced for the fallback; a strict budget that cannot cover its worst case
// refuses it, and nothing is overspent. The same with the retry token and
// with per-try routing (the try that lands on the fallback is admitted at
// its price and answered with a local reply).
func TestStrictBudgetRefusesAnExpensiveFallback(t *testing.T) {
	for _, perTry := range []bool{false, true} {
		t.Run(map[bool]string{false: "token", true: "per-try"}[perTry], func(t *testing.T) {
			cheap := openAIDep("gpt", "cheap")
			dear := openAIDep("dear", "dear")
			dear.Target.Price = kernel.Price{Input: 100 * kernel.Dollar, Output: 100 * kernel.Dollar}
			groups := []*routing.Group{
				{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{cheap}, Fallbacks: []string{"dear"}},
				{Name: "dear", Deployments: []*routing.Deployment{dear}},
			}
			var e *testEnv
			var rt *tryRouter
			up := newByDeployment()
			if perTry {
				e, _, rt, up = perTryEnv(t, groups...)
			} else {
				e, _ = routedEnv(t, groups...)
			}
			e.cat.keys[clientKey].Scopes[0].Limits = &kernel.Limits{
				Shortfall: kernel.Reject,
				Budgets:   []kernel.BudgetWindow{{Limit: kernel.Dollar / 1000, Period: kernel.Period{Kind: kernel.PeriodDaily}}},
			}
			up.answer["cheap"] = failing(500)
			var got *extprocfiltertest.Response
			if perTry {
				got = e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
				require.Equal(t, []string{"cheap", "dear"}, rt.tries, "the fallback is tried")
			} else {
				var delays []string
				got, delays = e.doRetrying(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
				require.Len(t, delays, 1, "the fallback is tried")
			}
			require.Equal(t, 400, got.Status, string(got.Body))
			require.Contains(t, string(got.Body), "budget_exceeded")
			require.Zero(t, up.count("dear"), "never sent: its worst case is over the budget")
			admits := e.acct.Admits()
			require.Len(t, admits, 2)
			require.Equal(t, dear.Target.Price, admits[1].Price, "the retry is priced for the fallback")
			recs := e.acct.waitRecords(t, 1)
			require.Equal(t, "cheap", recs[0].Deployment)
		})
	}
}

// TestForgedRetryTokenIsIgnored: a token not signed by this processor is a
// first attempt (a client cannot pick its attempt number or request id).
func TestForgedRetryTokenIsIgnored(t *testing.T) {
	e, _ := routedEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{openAIDep("gpt", "a"), openAIDep("gpt", "b")}})
	up := newByDeployment()
	q := url.Values{"a": {"3"}, "m": {"3"}, "g": {"gpt"}, "x": {"a,b"}, "r": {"victim"}}
	forged := q.Encode() + "&s=00112233445566778899aabbccddeeff"
	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody, extprocfilter.Header{Key: hdrRetry, Value: forged}), up.upstream)
	require.Equal(t, 200, got.Status)
	require.Equal(t, "1", got.Headers.Value(hdrAttempts))
	require.NotContains(t, got.Headers.Value(hdrRequestID), "victim")
}
