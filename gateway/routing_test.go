package gateway_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// redisReplicas starts n gateways sharing one memory store and one Redis
// (a key prefix of their own).
func redisReplicas(t *testing.T, n int) (store.Store, []*running) {
	t.Helper()
	opts, err := goredis.ParseURL(testenv.Redis(t))
	require.NoError(t, err)
	st := memstore.New()
	prefix := fmt.Sprintf("gw-route-%d", time.Now().UnixNano())
	var replicas []*running
	for range n {
		client := goredis.NewClient(opts)
		t.Cleanup(func() { _ = client.Close() })
		c := accounting.NewRedisCounters(client, accounting.LedgerSeed(st), accounting.WithPrefix(prefix))
		t.Cleanup(c.Close)
		replicas = append(replicas, startWith(t, false, st, c))
	}
	return st, replicas
}

// A deployment's rpm (the provider's quota) holds across two replicas
// sharing Redis: with rpm 2, the third request of the minute goes to the
// group's other deployment, whichever replica takes it; a group with no
// other deployment refuses it with 429. The mock counts what each
// deployment received.
func TestDeploymentRPMAcrossReplicasThroughRedis(t *testing.T) {
	st, replicas := redisReplicas(t, 2)
	mockURL := replicas[0].mockURL
	for _, name := range []string{"a", "b"} {
		put(t, st, "p"+name, &store.Provider{ID: "p" + name, Type: store.ProviderOpenAI, BaseURL: mockURL + "/d/" + name + "/v1"})
	}
	put(t, st, "a", &store.Deployment{ID: "a", Provider: "pa", ProviderModel: "mock-gpt", Weight: 1000, RPM: 2})
	put(t, st, "b", &store.Deployment{ID: "b", Provider: "pb", ProviderModel: "mock-gpt"})
	put(t, st, "routed", &store.ModelGroup{ID: "routed", Deployments: []string{"a", "b"}})
	put(t, st, "solo", &store.ModelGroup{ID: "solo", Deployments: []string{"a"}})
	key := replicas[0].key(t, "k", kernel.Limits{})
	for _, r := range replicas { // both replicas have the snapshot with the groups
		r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	}
	if s := time.Now().Second(); s > 50 { // stay inside one rpm window
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	body := func(model string) string {
		return `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	}
	var served []string
	for i := range 3 {
		resp, b := replicas[i%2].post(t, key, "/v1/chat/completions", body("routed"))
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		served = append(served, resp.Header.Get("x-tollgate-deployment"))
	}
	require.Equal(t, []string{"a", "a", "b"}, served)
	deps := replicas[0].mock.Deployments()
	require.EqualValues(t, 2, deps["a"].Received)
	require.EqualValues(t, 1, deps["b"].Received)

	resp, b := replicas[1].post(t, key, "/v1/chat/completions", body("solo"))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, string(b))
	require.NotEmpty(t, resp.Header.Get("retry-after"))
	require.EqualValues(t, 2, replicas[0].mock.Deployments()["a"].Received, "a deployment at its limit is not called")
}

// One dead and one healthy deployment behind the built-in data plane, on two
// replicas sharing Redis: the dead one takes allowed_fails failures on the
// first replica and is then out of rotation on both: the second replica
// sends it nothing once it adopted the cooldown.
func TestCooldownAcrossReplicasThroughRedis(t *testing.T) {
	st, replicas := redisReplicas(t, 2)
	mock := replicas[0].mock
	require.NoError(t, mock.SetFault("dead", &mockllm.Fault{Mode: mockllm.FaultError500}))
	for _, name := range []string{"dead", "ok"} {
		put(t, st, "p"+name, &store.Provider{ID: "p" + name, Type: store.ProviderOpenAI, BaseURL: replicas[0].mockURL + "/d/" + name + "/v1"})
	}
	put(t, st, "dead", &store.Deployment{
		ID: "dead", Provider: "pdead", ProviderModel: "mock-gpt", Weight: 1000,
		DeploymentPolicy: store.DeploymentPolicy{AllowedFails: 2, Cooldown: time.Hour},
	})
	put(t, st, "ok", &store.Deployment{ID: "ok", Provider: "pok", ProviderModel: "mock-gpt"})
	put(t, st, "routed", &store.ModelGroup{ID: "routed", Deployments: []string{"dead", "ok"}})
	key := replicas[0].key(t, "k", kernel.Limits{})
	body := `{"model":"routed","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	for _, r := range replicas {
		r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	}
	codes := map[int]int{}
	for range 20 {
		resp, _ := replicas[0].post(t, key, "/v1/chat/completions", body)
		codes[resp.StatusCode]++
	}
	require.Equal(t, map[int]int{http.StatusOK: 20}, codes, "the two failures are retried on the healthy deployment")
	require.EqualValues(t, 2, mock.Deployments()["dead"].Received)

	eventually(t, func() bool { return !replicas[1].g.Router.States(time.Now())["dead"].CoolingUntil.IsZero() })
	for range 20 {
		resp, b := replicas[1].post(t, key, "/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		require.Equal(t, "ok", resp.Header.Get("x-tollgate-deployment"))
	}
	require.EqualValues(t, 2, mock.Deployments()["dead"].Received, "nothing more during the cooldown, from either replica")
}

// Through the built-in data plane, deployments whose provider refuses
// connections (a closed port), resets them before any byte, or answers 429
// with retry-after cool down like a 5xx: the processor sees Envoy's local
// 503 (or the 429), retries each on another deployment, and the healthy
// deployment takes the rest. The mock
// counts what each deployment received.
func TestFailuresOfEveryKindCoolDown(t *testing.T) {
	r := start(t, false)
	require.NoError(t, r.mock.SetFault("reset", &mockllm.Fault{Mode: mockllm.FaultRefuse}))
	require.NoError(t, r.mock.SetFault("limited", &mockllm.Fault{Mode: mockllm.FaultRateLimit, RetryAfter: 3600}))
	bases := map[string]string{
		"closed":  "http://" + testenv.FreeAddr(t) + "/v1",
		"reset":   r.mockURL + "/d/reset/v1",
		"limited": r.mockURL + "/d/limited/v1",
		"ok":      r.mockURL + "/d/ok/v1",
	}
	var deps []string
	for name, base := range bases {
		put(t, r.st, "p"+name, &store.Provider{ID: "p" + name, Type: store.ProviderOpenAI, BaseURL: base})
		w := 1000
		if name == "ok" {
			w = 1
		}
		put(t, r.st, name, &store.Deployment{
			ID: name, Provider: "p" + name, ProviderModel: "mock-gpt", Weight: w,
			DeploymentPolicy: store.DeploymentPolicy{AllowedFails: 1, Cooldown: time.Hour},
		})
		deps = append(deps, name)
	}
	three := int32(3) // the first request tries each failing deployment, then the healthy one
	put(t, r.st, "routed", &store.ModelGroup{ID: "routed", Deployments: deps, GroupRouting: store.GroupRouting{Retries: &three}})
	key := r.key(t, "k", kernel.Limits{})
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	body := `{"model":"routed","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	for range 30 {
		resp, b := r.post(t, key, "/v1/chat/completions", body)
		require.Equal(t, http.StatusOK, resp.StatusCode, "every failure is retried: %s", b)
	}
	states := r.g.Router.States(time.Now())
	for _, name := range []string{"closed", "reset", "limited"} {
		require.False(t, states[name].CoolingUntil.IsZero(), name)
	}
	require.True(t, states["ok"].CoolingUntil.IsZero())
	require.EqualValues(t, 30, r.mock.Deployments()["ok"].Received)
	require.EqualValues(t, 1, r.mock.Deployments()["reset"].Received, "each failing deployment fails once, then cools down")
	require.EqualValues(t, 1, r.mock.Deployments()["limited"].Received)
}

// The latency strategy through the built-in data plane: a deployment whose
// provider answers a second late is measured once and then avoided; the
// fast one takes the rest.
func TestLatencyRoutingAvoidsTheSlowProvider(t *testing.T) {
	r := start(t, false)
	require.NoError(t, r.mock.SetFault("slow", &mockllm.Fault{Mode: mockllm.FaultSlow, DelayMS: 1000}))
	for _, name := range []string{"slow", "fast"} {
		put(t, r.st, "p"+name, &store.Provider{ID: "p" + name, Type: store.ProviderOpenAI, BaseURL: r.mockURL + "/d/" + name + "/v1"})
		put(t, r.st, name, &store.Deployment{ID: name, Provider: "p" + name, ProviderModel: "mock-gpt"})
	}
	put(t, r.st, "routed", &store.ModelGroup{ID: "routed", Deployments: []string{"slow", "fast"}, GroupRouting: store.GroupRouting{Routing: store.RoutingLatency}})
	key := r.key(t, "k", kernel.Limits{})
	r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
	for range 20 {
		resp, b := r.post(t, key, "/v1/chat/completions", `{"model":"routed","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	}
	deps := r.mock.Deployments()
	require.EqualValues(t, 1, deps["slow"].Received, "unmeasured deployments go first: measured once, then avoided")
	require.EqualValues(t, 19, deps["fast"].Received)
	require.Greater(t, r.g.Router.States(time.Now())["slow"].Latency, r.g.Router.States(time.Now())["fast"].Latency)
}
