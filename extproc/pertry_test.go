package extproc

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// tryRouter plays Envoy's router on the per-try xDS (docs/envoy.md,
// "Retries across deployments"): a request routed to a per-try key goes to
// that key's aggregate cluster, whose deployments are tried in order
// (retry_priority previous_priorities), each try through the upstream
// ext_proc filter (a stream of its own with envoy.TryAttribute and
// x-envoy-attempt-count), retried on 429/500/502/503/504 up to the group's
// retries. A try's local reply goes downstream, not retried, as Envoy's
// UpstreamFilterManager::sendLocalReply does. Anything else (a plain
// deployment route) goes straight to the deployment.
type tryRouter struct {
	t       *testing.T
	e       *testEnv
	lists   map[string][]string // per-try key → deployments in order
	retries map[string]int      // per-try key → num_retries
	up      *byDeployment
	tries   []string                              // the deployments tried, in order
	seen    []*extprocfiltertest.ForwardedRequest // what each try sent upstream (nil: none)
	// The internal redirect policy (routing.go): the per-try keys that
	// have it, the request a followed redirect recreates, and how many
	// were followed for the request (max_internal_redirects).
	redirect  map[string]bool
	recreated *extprocfiltertest.Request
	followed  int
}

// newTryRouter derives the per-try routes of groups as the xDS builder does.
func newTryRouter(t *testing.T, e *testEnv, up *byDeployment, groups ...*routing.Group) *tryRouter {
	r := &tryRouter{t: t, e: e, up: up, lists: map[string][]string{}, retries: map[string]int{}, redirect: map[string]bool{}}
	byName := map[string]*routing.Group{}
	for _, g := range groups {
		byName[g.Name] = g
	}
	fallbacks := func(n string) []string {
		if g := byName[n]; g != nil {
			return g.Fallbacks
		}
		return nil
	}
	for _, g := range groups {
		if !routing.PerTry(g.Retries, len(g.Deployments), g.FallbackCount()) {
			continue
		}
		var chain [][]string
		for _, name := range routing.GroupChain(g.Name, fallbacks) {
			var deps []string
			for _, d := range byName[name].Deployments {
				deps = append(deps, d.Target.Deployment)
			}
			chain = append(chain, deps)
		}
		for _, d := range g.Deployments {
			order := routing.TryOrder(d.Target.Deployment, chain)
			for skip := range routing.Masks(order) {
				key := envoy.TryKey(g.Name, d.Target.Deployment, skip)
				r.lists[key], r.retries[key] = routing.Skipped(order, skip), g.Retries
				r.redirect[key] = routing.RedirectsFallbacks(len(g.ContextWindowFallbacks), len(g.ContentPolicyFallbacks))
			}
		}
	}
	return r
}

func (r *tryRouter) upstream(req *extprocfiltertest.ForwardedRequest) *extprocfiltertest.UpstreamResponse {
	key := req.Headers.Value(RouteHeader)
	list, ok := r.lists[key]
	if !ok {
		r.tries = append(r.tries, key)
		return r.up.upstream(req)
	}
	var last *extprocfiltertest.Response
	// Every try runs on the router's own request header map
	// (UpstreamRequest::acceptHeadersFromRouter), which Filter::doRetry
	// does not restore: a try's header changes are the next try's
	// headers. The body is a fresh copy of the router's buffer.
	h := req.Headers.Clone()
	for i := 0; i <= r.retries[key] && i < len(list); i++ {
		h = setHeader(h, envoy.AttemptCountHeader, strconv.Itoa(i+1))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		got, err := extprocfiltertest.DoWith(ctx, r.e.client, &extprocfiltertest.Request{Headers: h, Body: [][]byte{slices.Clone(req.Body)}},
			r.up.upstream, extprocfilter.WithRequestAttributes(map[string]any{envoy.TryAttribute: list[i]}))
		cancel()
		require.NoError(r.t, err)
		require.Empty(r.t, got.Failures)
		r.tries = append(r.tries, list[i])
		r.seen = append(r.seen, got.Forwarded)
		last = got
		if got.Forwarded != nil {
			h = got.Forwarded.Headers.Clone()
		}
		if got.LocalReply != nil || !routing.Retryable(got.Status) {
			break
		}
	}
	if r.follows(key, last) {
		// The router recreates the stream (Router::Filter::setupRedirect):
		// its request headers as the try left them (upstream filters change
		// the router's own map), the copied headers and the location
		// applied, and the body it buffered; this stream gets nothing.
		r.recreated = &extprocfiltertest.Request{
			Headers: internalRedirect(r.t, last.Forwarded.Headers, last.Headers),
			Body:    [][]byte{req.Body},
		}
		r.followed++
		return &extprocfiltertest.UpstreamResponse{Abandoned: true}
	}
	out := &extprocfiltertest.UpstreamResponse{Status: last.Status, Chunks: last.Chunks, Reset: last.Reset, Trailers: last.Trailers}
	for _, kv := range last.Headers {
		if kv.Key != ":status" {
			out.Headers = append(out.Headers, kv)
		}
	}
	if len(out.Chunks) == 0 && len(last.Body) > 0 {
		out.Chunks = [][]byte{last.Body}
	}
	return out
}

// follows reports whether the router follows a try's response as an
// internal redirect: the route has the policy, the status is one of its
// codes, there is a location, and the request is under its
// max_internal_redirects.
func (r *tryRouter) follows(key string, last *extprocfiltertest.Response) bool {
	return r.redirect[key] && last.LocalReply == nil && last.Status == envoy.FallbackRedirectStatus &&
		last.Headers.Value("location") != "" && r.followed < envoy.MaxFallbackRedirects
}

// do runs a request through the router-level filter and the router,
// following internal redirects: each recreates the request, which goes
// through the router-level filter again.
func (r *tryRouter) do(t *testing.T, req *extprocfiltertest.Request) *extprocfiltertest.Response {
	t.Helper()
	r.followed, r.recreated = 0, nil
	for {
		got := r.e.do(t, req, r.upstream)
		if r.recreated == nil {
			return got
		}
		require.Zero(t, got.Status, "the abandoned stream sent nothing downstream")
		req, r.recreated = r.recreated, nil
	}
}

// setHeader is h with key's value replaced (Envoy's setEnvoyAttemptCount).
func setHeader(h extprocfilter.Headers, key, v string) extprocfilter.Headers {
	h = slices.DeleteFunc(h, func(kv extprocfilter.Header) bool { return kv.Key == key })
	return append(h, extprocfilter.Header{Key: key, Value: v})
}

// internalRedirect is the request Envoy's router recreates from the request
// headers it holds and a redirect's response headers
// (convertRequestHeadersForInternalRedirect): each of
// response_headers_to_copy replaced by the response's (removed when the
// response has none), :scheme, :authority and :path from the location, and
// x-envoy-original-url.
func internalRedirect(t *testing.T, held, resp extprocfilter.Headers) extprocfilter.Headers {
	loc, err := url.Parse(resp.Value("location"))
	require.NoError(t, err)
	require.True(t, loc.IsAbs(), "Envoy follows an absolute location only")
	var out extprocfilter.Headers
	for _, kv := range held {
		switch {
		case slices.Contains(envoy.FallbackCopiedHeaders, kv.Key):
		case kv.Key == ":scheme", kv.Key == ":authority", kv.Key == ":path":
		default:
			out = append(out, kv)
		}
	}
	for _, kv := range resp {
		if slices.Contains(envoy.FallbackCopiedHeaders, kv.Key) {
			out = append(out, kv)
		}
	}
	return append(out,
		extprocfilter.Header{Key: ":scheme", Value: loc.Scheme},
		extprocfilter.Header{Key: ":authority", Value: loc.Host},
		extprocfilter.Header{Key: ":path", Value: loc.RequestURI()},
		extprocfilter.Header{Key: "x-envoy-original-url", Value: held.Value(":scheme") + "://" + held.Value(":authority") + held.Value(":path")},
	)
}

// perTryEnv is routedEnv with per-try routing and its Envoy router.
func perTryEnv(t *testing.T, groups ...*routing.Group) (*testEnv, *testClock, *tryRouter, *byDeployment) {
	t.Helper()
	e, clk := routedEnvWith(t, []Option{WithPerTry()}, groups...)
	up := newByDeployment()
	return e, clk, newTryRouter(t, e, up, groups...), up
}

// TestPerTryHidesADeadDeployment: one dead and one healthy deployment,
// retried by the data plane's retry policy on the per-try route: 0 client
// errors over 200 requests; once the dead one cools down the router-level
// stream no longer sends tries to it first, and nothing fails over to it.
func TestPerTryHidesADeadDeployment(t *testing.T) {
	dead, ok := openAIDep("gpt", "dead"), openAIDep("gpt", "ok")
	dead.AllowedFails, dead.Cooldown = 3, 30*time.Second
	e, _, rt, up := perTryEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{dead, ok}})
	up.answer["dead"] = failing(503)
	for range 200 {
		got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
		require.Equal(t, 200, got.Status, string(got.Body))
		require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
		require.Empty(t, got.Headers.Value(hdrRetry), "no retry token: the data plane's policy retries")
	}
	require.Equal(t, 3, up.count("dead"), "cooled down after allowed_fails")

	recs := e.acct.waitRecords(t, 203)
	failed := 0
	for _, r := range recs {
		if r.Deployment == "dead" {
			failed++
			require.Equal(t, kernel.StatusFailed, r.Status)
			require.Equal(t, kernel.Usage{}, r.Usage, "a failed try is $0")
		}
	}
	require.Equal(t, 3, failed)
	require.Len(t, e.acct.Admits(), 203, "one reservation per try: the first try adopts the router's")
}

// TestPerTryAdoptsTheRoutersReservation: the first try on the deployment the
// router-level stream admitted settles that reservation (same id, one
// admission); a retry is "ID-2-x", admitted on its own deployment; the
// client's request is translated only by the tries, and the router-level
// stream forwards it untouched to the per-try route.
func TestPerTryAdoptsTheRoutersReservation(t *testing.T) {
	a, b := openAIDep("gpt", "a"), openAIDep("gpt", "b")
	a.Weight = preferred
	e, _, rt, up := perTryEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{a, b}})
	up.answer["a"] = failing(500)
	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, "b", got.Headers.Value(hdrDeployment))
	require.Equal(t, "2", got.Headers.Value(hdrAttempts))
	require.Equal(t, envoy.TryKey("gpt", "a", 0), got.Forwarded.Headers.Value(RouteHeader))
	require.Equal(t, chatBody, string(got.Forwarded.Body), "the router-level stream does not translate")
	require.NotEmpty(t, got.Forwarded.Headers.Value("authorization"), "each try authenticates the client again")
	require.Equal(t, []string{"a", "b"}, rt.tries)

	recs := e.acct.waitRecords(t, 2)
	require.Equal(t, "a", recs[0].Deployment)
	require.Equal(t, kernel.StatusFailed, recs[0].Status)
	require.Equal(t, 500, recs[0].HTTPStatus)
	require.Equal(t, "b", recs[1].Deployment)
	require.True(t, strings.HasPrefix(recs[1].RequestID, recs[0].RequestID+"-2-"), recs[1].RequestID)
	admits := e.acct.Admits()
	require.Len(t, admits, 2)
	require.Equal(t, recs[0].RequestID, admits[0].ID, "the router's reservation, settled by the first try")
}

// TestPerTryRetryAfterKeepsTheDeploymentOut: a 429 with retry-after 5 is
// retried on the other deployment; for 5 s the deployment gets nothing,
// then it is probed again.
func TestPerTryRetryAfterKeepsTheDeploymentOut(t *testing.T) {
	limited, ok := openAIDep("gpt", "limited"), openAIDep("gpt", "ok")
	limited.Weight = preferred
	e, clk, rt, up := perTryEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{limited, ok}})
	up.answer["limited"] = failing(429, extprocfilter.Header{Key: "retry-after", Value: "5"})
	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
	for range 20 {
		clk.advance(200 * time.Millisecond)
		require.Equal(t, 200, e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream).Status)
	}
	require.Equal(t, 1, up.count("limited"), "nothing for 5 s")
	clk.advance(time.Second + time.Millisecond)
	up.answer["limited"] = nil
	got = e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
	require.Equal(t, "limited", got.Headers.Value(hdrDeployment), "probed back in")
}

// TestPerTryFallsBackToAnthropic: a group whose deployments all fail falls
// back, within one request, to an Anthropic group: each try's body is
// translated for the deployment it landed on, for OpenAI and Anthropic
// clients, streamed and not; the ledger has every try.
func TestPerTryFallsBackToAnthropic(t *testing.T) {
	a, b := openAIDep("gpt", "a"), openAIDep("gpt", "b")
	a.AllowedFails, b.AllowedFails = 100, 100 // stay in rotation: each request falls back within itself
	groups := []*routing.Group{
		{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{a, b}, Fallbacks: []string{"claude"}},
		{Name: "claude", Deployments: []*routing.Deployment{anthropicDep("claude", "anthropic")}},
	}
	e, _, rt, up := perTryEnv(t, groups...)
	up.answer["a"], up.answer["b"] = failing(500), failing(502)
	for i, tc := range []struct {
		path, body, want string
		resp             func() *extprocfiltertest.UpstreamResponse
	}{
		{"/v1/chat/completions", chatBody, `"chat.completion"`, func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) }},
		{"/v1/chat/completions", `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`, "chat.completion.chunk", func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.NativeStream, 17) }},
		{"/v1/messages", `{"model":"gpt","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, `"type":"message"`, func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) }},
		{"/v1/messages", `{"model":"gpt","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, "message_stop", func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.NativeStream, 9) }},
	} {
		up.answer["anthropic"] = tc.resp
		rt.tries = nil
		got := e.do(t, post(tc.path, clientKey, tc.body), rt.upstream)
		require.Equal(t, 200, got.Status, "case %d: %s", i, got.Body)
		require.Equal(t, "anthropic", got.Headers.Value(hdrDeployment))
		require.Equal(t, "3", got.Headers.Value(hdrAttempts))
		require.Contains(t, string(got.Body), tc.want)
		require.Len(t, rt.tries, 3)
		require.Equal(t, "anthropic", rt.tries[2])
	}
	recs := e.acct.waitRecords(t, 12)
	served := 0
	for _, r := range recs {
		if r.Deployment == "anthropic" {
			served++
			require.Equal(t, "claude", r.Model, "charged to the group that served, at its price")
			require.Equal(t, kernel.StatusCompleted, r.Status)
			continue
		}
		require.Equal(t, kernel.StatusFailed, r.Status)
		require.Equal(t, kernel.Usage{}, r.Usage)
	}
	require.Equal(t, 4, served)
	for _, a := range e.acct.Admits() {
		if a.Model == "claude" {
			require.Equal(t, anthropicPrice, a.Price, "the reservation is priced for the fallback")
		}
	}
}

// TestPerTryStreamRetriedOnlyBeforeItsFirstByte: a stream whose first try
// fails before any byte is served by the next deployment; one whose
// response started is not retried: it ends, charged what was observed.
func TestPerTryStreamRetriedOnlyBeforeItsFirstByte(t *testing.T) {
	a, b := openAIDep("gpt", "a"), openAIDep("gpt", "b")
	a.Weight = preferred
	e, _, rt, up := perTryEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{a, b}})
	stream := `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	up.answer["a"] = func() *extprocfiltertest.UpstreamResponse {
		return &extprocfiltertest.UpstreamResponse{
			Status: 503, Headers: extprocfilter.Headers{{Key: "content-type", Value: "text/plain"}},
			Chunks: [][]byte{[]byte("upstream connect error or disconnect/reset before headers. reset reason: remote connection failure")},
		}
	}
	up.answer["b"] = func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.OpenAIStream, 7) }
	got := e.do(t, post("/v1/chat/completions", clientKey, stream), rt.upstream)
	require.Equal(t, 200, got.Status)
	require.Equal(t, "b", got.Headers.Value(hdrDeployment))
	require.Contains(t, string(got.Body), "chat.completion.chunk")

	up.answer["a"] = func() *extprocfiltertest.UpstreamResponse {
		r := sseResponse(translatetest.OpenAIStream[:len(translatetest.OpenAIStream)/2], 7)
		r.Reset = true
		return r
	}
	rt.tries = nil
	got = e.do(t, post("/v1/chat/completions", clientKey, stream), rt.upstream)
	require.Equal(t, 200, got.Status)
	require.True(t, got.Reset, "the stream ends: its headers went downstream")
	require.Equal(t, []string{"a"}, rt.tries, "not retried after its first byte")
}

// TestPerTryOnlyForGroupsThatRetryElsewhere: a group of one deployment
// without fallbacks (or with retries 0) keeps its plain deployment route,
// translated by the router-level stream as before.
func TestPerTryOnlyForGroupsThatRetryElsewhere(t *testing.T) {
	e, _, rt, _ := perTryEnv(t,
		&routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{openAIDep("gpt", "solo")}},
		&routing.Group{Name: "none", Retries: 0, Deployments: []*routing.Deployment{openAIDep("none", "n1"), openAIDep("none", "n2")}},
	)
	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, "solo", got.Forwarded.Headers.Value(RouteHeader))
	require.NotContains(t, got.Forwarded.Headers.Value("authorization"), clientKey)
	got = e.do(t, post("/v1/chat/completions", clientKey, strings.Replace(chatBody, `"gpt"`, `"none"`, 1)), rt.upstream)
	require.Equal(t, http.StatusOK, got.Status)
	require.Contains(t, []string{"n1", "n2"}, got.Forwarded.Headers.Value(RouteHeader))
}

// TestPerTryRetriesSkipACoolingDeployment: the router-level stream routes
// to the per-try route whose order leaves out the deployments cooling down,
// so a retry does not land on one (Envoy's outlier detection does not count
// a 429): a deployment cooling after its 429 gets nothing for its
// retry-after, retries included.
func TestPerTryRetriesSkipACoolingDeployment(t *testing.T) {
	limited, flaky, ok := openAIDep("gpt", "limited"), openAIDep("gpt", "flaky"), openAIDep("gpt", "ok")
	limited.Weight, flaky.Weight, flaky.AllowedFails = preferred, preferred>>20, 1000
	e, _, rt, up := perTryEnv(t, &routing.Group{Name: "gpt", Retries: 2, Deployments: []*routing.Deployment{limited, flaky, ok}})
	up.answer["limited"] = failing(429, extprocfilter.Header{Key: "retry-after", Value: "5"})
	up.answer["flaky"] = failing(500)
	for i := range 10 {
		got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), rt.upstream)
		require.Equal(t, 200, got.Status, string(got.Body))
		require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
		if i > 0 {
			require.Equal(t, envoy.TryKey("gpt", "flaky", 1), got.Forwarded.Headers.Value(RouteHeader), "limited left out of the order")
		}
	}
	require.Equal(t, 1, up.count("limited"), "nothing for 5 s, retries included")
}
