package extproc

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

// groupCatalog is fakeCatalog plus model groups: the processor routes.
type groupCatalog struct {
	*fakeCatalog
	groups map[string]*routing.Group
}

var _ GroupCatalog = (*groupCatalog)(nil)

func (c *groupCatalog) ResolveGroup(_ context.Context, p *Principal, model string) (*routing.Group, error) {
	g, ok := c.groups[model]
	if !ok {
		return nil, ErrModelNotFound
	}
	if !c.may(p, model) {
		return nil, ErrModelNotAllowed
	}
	return g, nil
}

// testClock is a settable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *testClock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// routedEnv serves a processor over gRPC, driven by the Envoy-faithful
// client, whose catalog routes groups.
func routedEnv(t *testing.T, groups ...*routing.Group) (*testEnv, *testClock) {
	t.Helper()
	return routedEnvWith(t, nil, groups...)
}

// routedEnvWith is routedEnv with processor options.
func routedEnvWith(t *testing.T, opts []Option, groups ...*routing.Group) (*testEnv, *testClock) {
	t.Helper()
	clk := &testClock{t: time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)}
	e := &testEnv{cat: newCatalog(), acct: newStateAccountant(t), logs: &syncBuffer{}}
	e.acct.now = clk.now
	gc := &groupCatalog{fakeCatalog: e.cat, groups: map[string]*routing.Group{}}
	for _, g := range groups {
		gc.groups[g.Name] = routing.NewGroup(g)
	}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.proc = New(gc, e.acct, append([]Option{WithLogger(log), WithClock(clk.now)}, opts...)...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e.client = extprocfilter.NewClient(dialProcessor(t, e.proc, lis), extprocfilter.DefaultConfig())
	return e, clk
}

// openAIDep is an OpenAI deployment of group model.
func openAIDep(model, id string) *routing.Deployment {
	return &routing.Deployment{Target: &translate.Target{
		Model: model, Deployment: id, Provider: translate.ProviderOpenAI, BasePath: "/v1", APIKey: openAIKey,
		ProviderModel: "gpt-4o", Price: testPrice, DefaultMaxTokens: 64,
	}}
}

// anthropicDep is an Anthropic deployment of group model.
func anthropicDep(model, id string) *routing.Deployment {
	return &routing.Deployment{Target: &translate.Target{
		Model: model, Deployment: id, Provider: translate.ProviderAnthropic, BasePath: "/v1", APIKey: anthropicKey,
		ProviderModel: "claude-sonnet-4-5", Price: anthropicPrice, DefaultMaxTokens: 64,
	}}
}

const chatBody = `{"model":"gpt","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`

const chatOK = `{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

const messagesOK = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}`

// byDeployment is a fake upstream answering per deployment (the route header)
// and counting what each received.
type byDeployment struct {
	mu     sync.Mutex
	got    map[string]int
	answer map[string]func() *extprocfiltertest.UpstreamResponse
	before func(dep string) // runs before answering (e.g. advances the clock)
}

func newByDeployment() *byDeployment {
	return &byDeployment{got: map[string]int{}, answer: map[string]func() *extprocfiltertest.UpstreamResponse{}}
}

func (b *byDeployment) upstream(req *extprocfiltertest.ForwardedRequest) *extprocfiltertest.UpstreamResponse {
	dep := req.Headers.Value(RouteHeader)
	b.mu.Lock()
	b.got[dep]++
	f := b.answer[dep]
	before := b.before
	b.mu.Unlock()
	if before != nil {
		before(dep)
	}
	if f == nil {
		return jsonResponse(200, chatOK)
	}
	return f()
}

func (b *byDeployment) count(dep string) int { b.mu.Lock(); defer b.mu.Unlock(); return b.got[dep] }

func failing(status int, headers ...extprocfilter.Header) func() *extprocfiltertest.UpstreamResponse {
	return func() *extprocfiltertest.UpstreamResponse {
		r := jsonResponse(status, `{"error":{"message":"down","type":"server_error","param":null,"code":null}}`)
		r.Headers = append(r.Headers, headers...)
		return r
	}
}

// TestDeadDeploymentCoolsDown: a group of a dead and a healthy deployment.
// The dead one takes allowed_fails failures, then nothing at all while it
// cools down; after the cooldown it is probed again. Every reply names the
// deployment that served it.
func TestDeadDeploymentCoolsDown(t *testing.T) {
	dead, ok := openAIDep("gpt", "dead"), openAIDep("gpt", "ok")
	dead.AllowedFails, dead.Cooldown = 3, 30*time.Second
	e, clk := routedEnv(t, &routing.Group{Name: "gpt", Deployments: []*routing.Deployment{dead, ok}})
	up := newByDeployment()
	up.answer["dead"] = failing(503)
	clientErrors := 0
	for range 200 {
		got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
		if got.Status != 200 {
			clientErrors++
			require.Equal(t, "dead", got.Headers.Value(hdrDeployment))
			continue
		}
		require.Equal(t, "ok", got.Headers.Value(hdrDeployment))
	}
	require.Equal(t, 3, up.count("dead"), "three failures, then out of rotation for the whole cooldown")
	require.Equal(t, 3, clientErrors, "through a data plane that does not retry (Envoy today, docs/envoy.md) the failures reach the client")
	require.Equal(t, 197, up.count("ok"))
	st := e.proc.router.States(clk.now())["dead"]
	require.True(t, clk.now().Add(30*time.Second).Equal(st.CoolingUntil), "%v", st.CoolingUntil)
	require.Positive(t, st.ErrorRate)

	clk.advance(31 * time.Second)
	for range 50 {
		e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	}
	require.Greater(t, up.count("dead"), 3, "probed back in after the cooldown")
}

// TestRetryAfterCoolsForItsDuration: a 429 with retry-after: 5 keeps the
// deployment out for exactly 5 s.
// preferred is the weight of a deployment a test wants chosen first whenever
// it is in rotation: against weight 1 the weighted draw picks another once in
// 2^40 (at 1000 it did once in a thousand, and the tests failed that often).
const preferred = 1 << 40

func TestRetryAfterCoolsForItsDuration(t *testing.T) {
	limited, ok := openAIDep("gpt", "limited"), openAIDep("gpt", "ok")
	limited.Weight = preferred
	e, clk := routedEnv(t, &routing.Group{Name: "gpt", Deployments: []*routing.Deployment{limited, ok}})
	up := newByDeployment()
	up.answer["limited"] = failing(429, extprocfilter.Header{Key: "retry-after", Value: "5"})
	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	require.Equal(t, 429, got.Status)
	for range 20 {
		clk.advance(200 * time.Millisecond) // 4 s in all
		got = e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
		require.Equal(t, 200, got.Status)
	}
	require.Equal(t, 1, up.count("limited"), "nothing for 5 s")
	clk.advance(time.Second + time.Millisecond)
	e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	require.Equal(t, 2, up.count("limited"), "back once the 5 s are over")
}

// TestDeploymentRPMIsEnforcedAtRouting: rpm 2 on the preferred deployment;
// the third request in the minute goes to the other one; with no other one
// it is refused with 429, and the next minute it is served again.
func TestDeploymentRPMIsEnforcedAtRouting(t *testing.T) {
	small, big := openAIDep("gpt", "small"), openAIDep("gpt", "big")
	small.RPM, small.Weight = 2, preferred
	solo := openAIDep("solo", "solo")
	solo.RPM = 2
	e, clk := routedEnv(t, &routing.Group{Name: "gpt", Deployments: []*routing.Deployment{small, big}}, &routing.Group{Name: "solo", Deployments: []*routing.Deployment{solo}})
	up := newByDeployment()
	for range 3 {
		require.Equal(t, 200, e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream).Status)
	}
	require.Equal(t, 2, up.count("small"))
	require.Equal(t, 1, up.count("big"), "the third request in the minute goes to the other deployment")

	soloBody := `{"model":"solo","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	for range 2 {
		require.Equal(t, 200, e.do(t, post("/v1/chat/completions", clientKey, soloBody), up.upstream).Status)
	}
	got := e.do(t, post("/v1/chat/completions", clientKey, soloBody), up.upstream)
	require.Equal(t, 429, got.Status, string(got.Body))
	require.Contains(t, string(got.Body), "every deployment of the model `solo`")
	require.NotEmpty(t, got.Headers.Value("retry-after"))
	require.Equal(t, 2, up.count("solo"), "a deployment at its limit is not called")
	clk.advance(time.Minute)
	require.Equal(t, 200, e.do(t, post("/v1/chat/completions", clientKey, soloBody), up.upstream).Status)
}

// TestFallbackToAnthropicGroup: a group whose only deployment fails falls
// back to an Anthropic group once it cools down: OpenAI and Anthropic
// clients, JSON and streamed, are served through translation, and the
// ledger names the fallback group and deployment.
func TestFallbackToAnthropicGroup(t *testing.T) {
	bad := openAIDep("gpt", "bad")
	bad.AllowedFails = 1
	e, _ := routedEnv(t,
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{bad}, Fallbacks: []string{"claude"}},
		&routing.Group{Name: "claude", Deployments: []*routing.Deployment{anthropicDep("claude", "anthropic")}},
	)
	up := newByDeployment()
	up.answer["bad"] = failing(500)
	up.answer["anthropic"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) }
	require.Equal(t, 500, e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream).Status)

	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, "anthropic", got.Headers.Value(hdrDeployment))
	require.Contains(t, string(got.Body), `"chat.completion"`, "translated back to the client's API")
	require.Equal(t, "/v1/messages", got.Forwarded.Headers.Value(":path"))

	up.answer["anthropic"] = func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.NativeStream, 17) }
	got = e.do(t, post("/v1/chat/completions", clientKey, `{"model":"gpt","stream":true,"messages":[{"role":"user","content":"hi"}],"max_tokens":8}`), up.upstream)
	require.Equal(t, 200, got.Status)
	require.Contains(t, string(got.Body), "chat.completion.chunk")

	msgs := `{"model":"gpt","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`
	up.answer["anthropic"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) }
	got = e.do(t, post("/v1/messages", clientKey, msgs), up.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.JSONEq(t, translatetest.NamedModel(messagesOK, "claude-sonnet-4-5", "gpt"), string(got.Body), "the reply names the client's model")
	up.answer["anthropic"] = func() *extprocfiltertest.UpstreamResponse { return sseResponse(translatetest.NativeStream, 9) }
	got = e.do(t, post("/v1/messages", clientKey, `{"model":"gpt","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`), up.upstream)
	require.Equal(t, 200, got.Status)
	require.Equal(t, translatetest.NamedModel(translatetest.NativeStream, "claude-sonnet-4-5-20250929", "gpt"), string(got.Body))

	recs := e.acct.waitRecords(t, 5)
	require.Equal(t, "bad", recs[0].Deployment)
	require.Equal(t, kernel.StatusFailed, recs[0].Status)
	for _, r := range recs[1:] {
		require.Equal(t, "claude", r.Model, "charged to the group that served, at its price")
		require.Equal(t, "anthropic", r.Deployment)
		require.Equal(t, kernel.StatusCompleted, r.Status)
	}
	for _, a := range e.acct.Admits()[1:] {
		require.Equal(t, anthropicPrice, a.Price, "the reservation is priced for the fallback")
	}
	require.Equal(t, 1, up.count("bad"))
}

// TestNoDeploymentAvailable: every deployment cooling and no fallback: 503
// with the retry-after of the soonest return. A group of one deployment is
// the exception: it has nothing better, so the provider still gets the
// request (as LiteLLM, which never cools the only deployment down).
func TestNoDeploymentAvailable(t *testing.T) {
	a, b := openAIDep("gpt", "a"), openAIDep("gpt", "b")
	a.AllowedFails, a.Cooldown = 1, 10*time.Second
	b.AllowedFails, b.Cooldown = 1, 20*time.Second
	only := openAIDep("solo", "only")
	only.AllowedFails = 1
	e, clk := routedEnv(t, &routing.Group{Name: "gpt", Deployments: []*routing.Deployment{a, b}}, &routing.Group{Name: "solo", Deployments: []*routing.Deployment{only}})
	up := newByDeployment()
	up.answer["a"], up.answer["b"], up.answer["only"] = failing(502), failing(502), failing(502)
	require.Equal(t, 502, e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream).Status)
	require.Equal(t, 502, e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream).Status)
	clk.advance(4 * time.Second)
	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	require.Equal(t, 503, got.Status)
	require.Equal(t, "6", got.Headers.Value("retry-after"), "the soonest of the two cooldowns")
	require.Equal(t, 2, up.count("a")+up.count("b"))
	require.Len(t, e.acct.Admits(), 2, "nothing admitted while no deployment can serve")

	soloBody := `{"model":"solo","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`
	for range 3 {
		require.Equal(t, 502, e.do(t, post("/v1/chat/completions", clientKey, soloBody), up.upstream).Status)
	}
	require.Equal(t, 3, up.count("only"), "the only deployment is always tried")
	require.False(t, e.proc.router.States(clk.now())["only"].CoolingUntil.IsZero(), "its state still says it cools down")
}

// TestLatencyStrategyAvoidsTheSlowDeployment: with "latency", once both
// deployments were measured the slow one gets no more traffic.
func TestLatencyStrategyAvoidsTheSlowDeployment(t *testing.T) {
	e, clk := routedEnv(t, &routing.Group{Name: "gpt", Strategy: routing.StrategyLatency, Deployments: []*routing.Deployment{openAIDep("gpt", "slow"), openAIDep("gpt", "fast")}})
	up := newByDeployment()
	up.before = func(dep string) {
		if dep == "slow" {
			clk.advance(800 * time.Millisecond)
		} else {
			clk.advance(50 * time.Millisecond)
		}
	}
	for range 100 {
		require.Equal(t, 200, e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream).Status)
	}
	require.LessOrEqual(t, up.count("slow"), 1, "measured once (unmeasured deployments go first), then avoided")
	require.GreaterOrEqual(t, up.count("fast"), 99)
	st := e.proc.router.States(clk.now())
	require.Equal(t, 50*time.Millisecond, st["fast"].Latency)
}

// BenchmarkHandleNonStreamRouted is BenchmarkHandleNonStream through a
// routing catalog with a one-deployment group: the routing path's own cost.
func BenchmarkHandleNonStreamRouted(b *testing.B) {
	base := newCatalog()
	gc := &groupCatalog{fakeCatalog: base, groups: map[string]*routing.Group{
		"gpt-4o": routing.NewGroup(&routing.Group{Name: "gpt-4o", Deployments: []*routing.Deployment{{Target: base.targets["gpt-4o"]}}}),
	}}
	benchHandleNonStream(b, New(gc, benchAccountant{}))
}

// TestLeastBusyAvoidsTheDeploymentInFlight: while one request is held on a
// deployment (its upstream answers only after the others ran, from inside
// its own call), the next ones go to the other deployment (fewest in
// flight), whichever the first one landed on.
func TestLeastBusyAvoidsTheDeploymentInFlight(t *testing.T) {
	e, _ := routedEnv(t, &routing.Group{Name: "gpt", Strategy: routing.StrategyLeastBusy, Deployments: []*routing.Deployment{openAIDep("gpt", "a"), openAIDep("gpt", "b")}})
	up := newByDeployment()
	var held atomic.Bool
	var busy string
	var others []string
	up.before = func(dep string) {
		if !held.CompareAndSwap(false, true) {
			return
		}
		busy = dep
		require.EqualValues(t, 1, e.proc.router.States(time.Now())[dep].InFlight)
		for range 5 {
			got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
			require.Equal(t, 200, got.Status)
			others = append(others, got.Headers.Value(hdrDeployment))
		}
	}
	require.Equal(t, 200, e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream).Status)
	require.Len(t, others, 5)
	for _, d := range others {
		require.NotEqual(t, busy, d, "the deployment with a request in flight is avoided")
	}
	require.Zero(t, e.proc.router.States(time.Now())[busy].InFlight, "in flight drops back once settled")
}

// TestDeploymentRPMPassesOverToAnotherProvider: a deployment whose rpm is
// spent passes the request over, at admission, to the fallback group's
// Anthropic deployment: translated for it and back, the reply naming that
// deployment.
func TestDeploymentRPMPassesOverToAnotherProvider(t *testing.T) {
	gpt := openAIDep("gpt", "gpt-1")
	gpt.RPM = 1
	e, _ := routedEnv(t,
		&routing.Group{Name: "gpt", Deployments: []*routing.Deployment{gpt}, Fallbacks: []string{"claude"}},
		&routing.Group{Name: "claude", Deployments: []*routing.Deployment{anthropicDep("claude", "anthropic")}},
	)
	up := newByDeployment()
	up.answer["anthropic"] = func() *extprocfiltertest.UpstreamResponse { return jsonResponse(200, messagesOK) }
	require.Equal(t, 200, e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream).Status)
	got := e.do(t, post("/v1/chat/completions", clientKey, chatBody), up.upstream)
	require.Equal(t, 200, got.Status, string(got.Body))
	require.Equal(t, "anthropic", got.Headers.Value(hdrDeployment), "gpt-1's minute is spent")
	require.Equal(t, "/v1/messages", got.Forwarded.Headers.Value(":path"), "translated for Anthropic")
	require.Contains(t, string(got.Body), `"chat.completion"`, "and back")
	require.Equal(t, 1, up.count("gpt-1"))
}
