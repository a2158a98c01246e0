package cache

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// plan is req's plan under pol, its semantic parts read as an exact miss
// reads them.
func plan(t *testing.T, req Request, pol Policy) Plan {
	t.Helper()
	p, err := NewPlan(&req, &pol)
	require.NoError(t, err)
	p.resolveSemantic()
	return p
}

var (
	exact   = Policy{Mode: ModeExact}
	tenantA = Tenant{Org: "o1", Team: "t1", Key: "k1"}
)

func chatReq(body string) Request {
	return Request{API: APIChat, Model: "gpt", Body: []byte(body), Tenant: tenantA}
}

// The key ignores key order, whitespace, number spelling and the fields that
// do not change the answer; anything else changes it.
func TestKeyNormalization(t *testing.T) {
	base := plan(t, chatReq(`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}]}`), exact)
	require.True(t, base.Lookup)
	require.True(t, base.Store)
	same := []string{
		`{"messages":[{"content":"hi","role":"user"}],"temperature":0.0,"model":"gpt"}`,
		"{ \"model\" : \"gpt\",\n \"temperature\": 0e0, \"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}],"user":"u-9","metadata":{"a":"b"},"store":true,"service_tier":"auto"}`,
		`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"h\u0069"}]}`,
	}
	for _, b := range same {
		require.Equal(t, base.Key, plan(t, chatReq(b), exact).Key, b)
	}
	differ := []string{
		`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi!"}]}`,
		`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}],"max_tokens":5}`,
		`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}],"seed":9007199254740993}`,
		`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}],"tools":[]}`,
	}
	for _, b := range differ {
		require.NotEqual(t, base.Key, plan(t, chatReq(b), exact).Key, b)
	}
	// Seeds beyond float64's exact range stay distinct.
	s1 := plan(t, chatReq(`{"temperature":0,"seed":9007199254740993}`), exact)
	s2 := plan(t, chatReq(`{"temperature":0,"seed":9007199254740992}`), exact)
	require.NotEqual(t, s1.Key, s2.Key)
	// Another model group, API or Vary: another key.
	r := chatReq(`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}]}`)
	r.Model = "other"
	require.NotEqual(t, base.Key, plan(t, r, exact).Key)
	r = chatReq(`{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"hi"}]}`)
	r.Vary = "beta"
	require.NotEqual(t, base.Key, plan(t, r, exact).Key)
	r.API, r.Vary = APIResponses, ""
	require.NotEqual(t, base.Key, plan(t, r, exact).Key)
}

// Scopes: key by default; team and org share within them; never across
// organizations, and a level the key lacks falls back to the key itself.
func TestKeyScope(t *testing.T) {
	body := `{"temperature":0,"messages":[]}`
	key := func(tn Tenant, l Level) Key {
		r := chatReq(body)
		r.Tenant = tn
		return plan(t, r, Policy{Mode: ModeExact, Level: l}).Key
	}
	sameTeam := Tenant{Org: "o1", Team: "t1", Key: "k2"}
	otherTeam := Tenant{Org: "o1", Team: "t2", Key: "k3"}
	otherOrg := Tenant{Org: "o2", Team: "t1", Key: "k1"}
	require.NotEqual(t, key(tenantA, LevelKey), key(sameTeam, LevelKey))
	require.Equal(t, key(tenantA, LevelTeam), key(sameTeam, LevelTeam))
	require.NotEqual(t, key(tenantA, LevelTeam), key(otherTeam, LevelTeam))
	require.Equal(t, key(tenantA, LevelOrg), key(otherTeam, LevelOrg))
	require.NotEqual(t, key(tenantA, LevelOrg), key(otherOrg, LevelOrg))
	require.NotEqual(t, key(tenantA, LevelTeam), key(otherOrg, LevelTeam), "same team id in another org")
	noTeam := Tenant{Org: "o1", Key: "k4"}
	noTeam2 := Tenant{Org: "o1", Key: "k5"}
	require.NotEqual(t, key(noTeam, LevelTeam), key(noTeam2, LevelTeam))
	noOrg := Tenant{Key: "k6"}
	noOrg2 := Tenant{Key: "k7"}
	require.NotEqual(t, key(noOrg, LevelOrg), key(noOrg2, LevelOrg))
}

func TestPlanCacheability(t *testing.T) {
	cases := []struct {
		name         string
		req          Request
		pol          Policy
		lookup       bool
		store        bool
		reason       string
		ttl          time.Duration
		wantSemantic bool
	}{
		{name: "off", req: chatReq(`{"temperature":0}`), pol: Policy{}, reason: "disabled"},
		{name: "temperature 0", req: chatReq(`{"temperature":0}`), pol: exact, lookup: true, store: true, ttl: DefaultTTL},
		{name: "no temperature", req: chatReq(`{}`), pol: exact, reason: "not_deterministic"},
		{name: "temperature 0.7", req: chatReq(`{"temperature":0.7}`), pol: exact, reason: "not_deterministic"},
		{name: "match all", req: chatReq(`{"temperature":0.7}`), pol: Policy{Mode: ModeExact, Match: MatchAll, TTL: time.Minute}, lookup: true, store: true, ttl: time.Minute},
		{name: "opted in by ttl header", req: withHeaders(chatReq(`{}`), "", "90"), pol: exact, lookup: true, store: true, ttl: 90 * time.Second},
		{name: "ttl header as duration", req: withHeaders(chatReq(`{"temperature":0}`), "", "2h"), pol: exact, lookup: true, store: true, ttl: 2 * time.Hour},
		{name: "ttl 0: no write", req: withHeaders(chatReq(`{"temperature":0}`), "", "0"), pol: exact, lookup: true, reason: "no-store", ttl: DefaultTTL},
		{name: "no-cache", req: withHeaders(chatReq(`{"temperature":0}`), "No-Cache", ""), pol: exact, store: true, reason: "no-cache", ttl: DefaultTTL},
		{name: "no-store", req: withHeaders(chatReq(`{"temperature":0}`), "max-age=0, no-store", ""), pol: exact, lookup: true, reason: "no-store", ttl: DefaultTTL},
		{name: "both", req: withHeaders(chatReq(`{"temperature":0}`), "no-cache,no-store", ""), pol: exact, reason: "no-cache", ttl: DefaultTTL},
		{name: "embeddings always", req: Request{API: APIEmbeddings, Body: []byte(`{"input":"x"}`)}, pol: exact, lookup: true, store: true, ttl: DefaultTTL},
		{name: "gemini temperature", req: Request{API: APIGeminiGenerate, Body: []byte(`{"generationConfig":{"temperature":0}}`)}, pol: exact, lookup: true, store: true, ttl: DefaultTTL},
		{name: "gemini without", req: Request{API: APIGeminiGenerate, Body: []byte(`{"contents":[]}`)}, pol: exact, reason: "not_deterministic"},
		{name: "count tokens", req: Request{API: "anthropic.count_tokens", Body: []byte(`{}`)}, pol: exact, reason: "unsupported"},
		{
			name: "semantic", req: chatReq(`{"temperature":0,"messages":[{"role":"user","content":"hi"}]}`),
			pol:    Policy{Mode: ModeSemantic, EmbeddingModel: "emb"},
			lookup: true, store: true, ttl: DefaultTTL, wantSemantic: true,
		},
		{
			name: "semantic without an embedding model is exact", req: chatReq(`{"temperature":0,"messages":[{"role":"user","content":"hi"}]}`),
			pol: Policy{Mode: ModeSemantic}, lookup: true, store: true, ttl: DefaultTTL,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := plan(t, c.req, c.pol)
			require.Equal(t, c.lookup, p.Lookup)
			require.Equal(t, c.store, p.Store)
			require.Equal(t, c.reason, p.Reason)
			require.Equal(t, c.ttl, p.TTL)
			require.Equal(t, c.wantSemantic, p.Semantic)
			if c.wantSemantic {
				require.InDelta(t, DefaultThreshold, p.Threshold, 0)
				require.Equal(t, "user:\nhi", p.Prompt)
			}
		})
	}
}

func withHeaders(r Request, cc, ttl string) Request {
	r.CacheControl, r.TTL = cc, ttl
	return r
}

func TestPlanErrors(t *testing.T) {
	for _, ttl := range []string{"-1", "soon", "-5m", "721h", "99999999999"} {
		_, err := NewPlan(&Request{API: APIChat, Body: []byte(`{}`), TTL: ttl}, &exact)
		require.ErrorIs(t, err, ErrBadTTL, ttl)
	}
	for _, b := range []string{``, `[]`, `{"a":1} x`, `{`, `null`} {
		_, err := NewPlan(&Request{API: APIChat, Body: []byte(b)}, &exact)
		require.ErrorIs(t, err, ErrBadBody, b)
	}
}

// The semantic namespace is the request without its prompt: the same
// settings with another prompt share it, other settings do not.
func TestSemanticNamespace(t *testing.T) {
	pol := Policy{Mode: ModeSemantic, EmbeddingModel: "emb"}
	a := plan(t, chatReq(`{"temperature":0,"messages":[{"role":"user","content":"What is the capital of France?"}]}`), pol)
	b := plan(t, chatReq(`{"temperature":0,"messages":[{"role":"user","content":"what's France's capital"}]}`), pol)
	c := plan(t, chatReq(`{"temperature":0,"max_tokens":3,"messages":[{"role":"user","content":"What is the capital of France?"}]}`), pol)
	require.Equal(t, a.Namespace, b.Namespace)
	require.NotEqual(t, a.Key, b.Key)
	require.NotEqual(t, a.Namespace, c.Namespace)
	m := Request{API: APIMessages, Model: "claude", Tenant: tenantA, Body: []byte(`{"temperature":0,"system":"Be brief.","messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`)}
	require.Equal(t, "Be brief.\nuser:\nHello", plan(t, m, pol).Prompt)
}
