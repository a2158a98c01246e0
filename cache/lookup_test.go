package cache

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

const chatBody = `{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"What is the capital of France?"}]}`

func chatPlan(t *testing.T, body string, stream bool, tn Tenant, pol Policy) *Plan {
	t.Helper()
	r := Request{API: APIChat, Model: "gpt", Body: []byte(body), Stream: stream, Tenant: tn}
	p, err := NewPlan(&r, &pol)
	require.NoError(t, err)
	return &p
}

// A reply stored from a plain request is a hit for the same request (the
// body as stored) and, rendered as a stream, for a streaming one; another
// key of the same team misses at key level and hits at team level.
func TestExactHitMiss(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	c := New(NewMemory(0, 0, clk.now), WithClock(clk.now))
	reply := readReply(t, "chat_text")

	p := chatPlan(t, chatBody, false, tenantA, exact)
	h, err := c.Lookup(ctx, p, nil)
	require.NoError(t, err)
	require.Nil(t, h, "miss")
	require.NoError(t, c.Store(ctx, p, &Entry{Body: reply, Usage: kernel.Usage{Input: 14, Output: 7}, Cost: 42}, nil))

	clk.add(90 * time.Second)
	h, err = c.Lookup(ctx, chatPlan(t, chatBody, false, tenantA, exact), nil)
	require.NoError(t, err)
	require.NotNil(t, h)
	require.Equal(t, string(reply), string(h.Body))
	require.Equal(t, contentJSON, h.ContentType)
	require.Equal(t, "90", h.AgeSeconds())
	require.Equal(t, "hit", h.Header())
	require.Equal(t, kernel.Money(42), h.Entry.Cost)

	// The same request streamed (stream fields are not in the key).
	sp := chatPlan(t, strings.Replace(chatBody, `"temperature":0`, `"temperature":0,"stream":true,"stream_options":{"include_usage":true}`, 1), true, tenantA, exact)
	h, err = c.Lookup(ctx, sp, nil)
	require.NoError(t, err)
	require.NotNil(t, h)
	require.Equal(t, contentSSE, h.ContentType)
	require.True(t, strings.HasSuffix(string(h.Body), "data: [DONE]\n\n"))
	require.Contains(t, string(h.Body), `"usage":{"prompt_tokens":14`)

	// Another key of the same team: a miss at key level, a hit at team level.
	mate := Tenant{Org: "o1", Team: "t1", Key: "k2"}
	h, err = c.Lookup(ctx, chatPlan(t, chatBody, false, mate, exact), nil)
	require.NoError(t, err)
	require.Nil(t, h)
	team := Policy{Mode: ModeExact, Level: LevelTeam}
	require.NoError(t, c.Store(ctx, chatPlan(t, chatBody, false, tenantA, team), &Entry{Body: reply}, nil))
	h, err = c.Lookup(ctx, chatPlan(t, chatBody, false, mate, team), nil)
	require.NoError(t, err)
	require.NotNil(t, h)
	// Another organization's key with the same team id misses.
	h, err = c.Lookup(ctx, chatPlan(t, chatBody, false, Tenant{Org: "o2", Team: "t1", Key: "k9"}, team), nil)
	require.NoError(t, err)
	require.Nil(t, h)

	// no-cache skips the lookup; past the TTL the entry is gone.
	r := Request{API: APIChat, Model: "gpt", Body: []byte(chatBody), Tenant: tenantA, CacheControl: "no-cache"}
	np, err := NewPlan(&r, &exact)
	require.NoError(t, err)
	h, err = c.Lookup(ctx, &np, nil)
	require.NoError(t, err)
	require.Nil(t, h)
	clk.add(time.Hour)
	h, err = c.Lookup(ctx, chatPlan(t, chatBody, false, tenantA, exact), nil)
	require.NoError(t, err)
	require.Nil(t, h, "expired")
}

// A reply first seen as a stream is stored folded, and a plain request gets
// it as a chat.completion.
func TestStreamedMissPlainHit(t *testing.T) {
	ctx := context.Background()
	c := New(NewMemory(0, 0, nil))
	sp := chatPlan(t, strings.Replace(chatBody, "{", `{"stream":true,`, 1), true, tenantA, exact)
	stream, _, err := render(&Entry{API: APIChat, Body: readReply(t, "chat_text")}, &Plan{api: APIChat, stream: true})
	require.NoError(t, err)
	col := NewCollector(sp)
	col.Write(stream)
	body, err := col.Body(kernel.Usage{Input: 14, Output: 7})
	require.NoError(t, err)
	require.NoError(t, c.Store(ctx, sp, &Entry{Body: body}, nil))

	h, err := c.Lookup(ctx, chatPlan(t, chatBody, false, tenantA, exact), nil)
	require.NoError(t, err)
	require.NotNil(t, h)
	require.JSONEq(t, string(withoutKeys(t, readReply(t, "chat_text"), "annotations")), string(h.Body))
}

// A plan that does not store writes nothing; an entry of another API under
// the key is a miss.
func TestStoreSkips(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(0, 0, nil)
	c := New(m)
	r := Request{API: APIChat, Model: "gpt", Body: []byte(chatBody), Tenant: tenantA, CacheControl: "no-store"}
	p, err := NewPlan(&r, &exact)
	require.NoError(t, err)
	require.NoError(t, c.Store(ctx, &p, &Entry{Body: []byte(`{}`)}, nil))
	require.Zero(t, m.Len())

	p2 := chatPlan(t, chatBody, false, tenantA, exact)
	b, err := (&Entry{API: APIMessages, Body: []byte(`{}`)}).encode()
	require.NoError(t, err)
	require.NoError(t, m.Set(ctx, p2.Key, b, time.Hour))
	h, err := c.Lookup(ctx, p2, nil)
	require.NoError(t, err)
	require.Nil(t, h)
}

// fakeEmbedder maps prompts to vectors by the words they contain, counting
// its calls.
type fakeEmbedder struct {
	calls int
	fail  bool
}

var vocabulary = []string{"capital", "france", "paris", "weather", "rome", "italy"}

func (f *fakeEmbedder) Embed(_ context.Context, model, text string) ([]float32, error) {
	f.calls++
	if f.fail {
		return nil, errors.New("upstream down")
	}
	if model != "emb" {
		return nil, errors.New("unknown model " + model)
	}
	v := make([]float32, len(vocabulary))
	lower := strings.ToLower(text)
	for i, w := range vocabulary {
		if strings.Contains(lower, w) {
			v[i] = 1
		}
	}
	return v, nil
}

// semanticContract: a paraphrase above the threshold hits (semantic, with
// its score), a prompt below it misses, other scopes and settings miss.
func semanticContract(t *testing.T, idx Index) {
	ctx := context.Background()
	c := New(NewMemory(0, 0, nil), WithIndex(idx))
	emb := &fakeEmbedder{}
	pol := Policy{Mode: ModeSemantic, EmbeddingModel: "emb", Threshold: 0.8}
	first := chatPlan(t, chatBody, false, tenantA, pol)
	h, err := c.Lookup(ctx, first, emb)
	require.NoError(t, err)
	require.Nil(t, h)
	require.Equal(t, 1, emb.calls)
	require.NoError(t, c.Store(ctx, first, &Entry{Body: readReply(t, "chat_text")}, emb))
	require.Equal(t, 1, emb.calls, "the lookup's embedding is indexed")

	para := `{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"France: its capital?"}]}`
	h, err = c.Lookup(ctx, chatPlan(t, para, false, tenantA, pol), emb)
	require.NoError(t, err)
	require.NotNil(t, h)
	require.True(t, h.Semantic)
	require.InDelta(t, 1.0, h.Score, 1e-6)
	require.Equal(t, "hit; semantic; score=1.000", h.Header())

	near := `{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"capital of France, Paris?"}]}`
	h, err = c.Lookup(ctx, chatPlan(t, near, false, tenantA, pol), emb)
	require.NoError(t, err)
	require.NotNil(t, h) // cos = 2/sqrt(2*3) = 0.816
	require.InDelta(t, 0.816, h.Score, 0.001)

	far := `{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"capital of Italy? Rome?"}]}`
	h, err = c.Lookup(ctx, chatPlan(t, far, false, tenantA, pol), emb)
	require.NoError(t, err)
	require.Nil(t, h, "below the threshold") // cos = 1/sqrt(2*3)

	other := Tenant{Org: "o2", Team: "t1", Key: "k1"}
	h, err = c.Lookup(ctx, chatPlan(t, para, false, other, pol), emb)
	require.NoError(t, err)
	require.Nil(t, h, "another organization")

	h, err = c.Lookup(ctx, chatPlan(t, strings.Replace(para, "{", `{"max_tokens":5,`, 1), false, tenantA, pol), emb)
	require.NoError(t, err)
	require.Nil(t, h, "other settings")

	_, err = c.Lookup(ctx, chatPlan(t, para+" ", false, Tenant{Org: "o3"}, pol), &fakeEmbedder{fail: true})
	require.ErrorIs(t, err, ErrEmbed)
}

func TestSemanticMemoryIndex(t *testing.T) {
	semanticContract(t, NewMemoryIndex(0, nil))
}

// The in-process index drops expired vectors and keeps at most its cap a
// namespace.
func TestMemoryIndexBounds(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	idx := NewMemoryIndex(2, clk.now)
	v := []float32{1, 0}
	require.NoError(t, idx.Add(ctx, "ns", v, "a", clk.now().Add(time.Minute)))
	require.NoError(t, idx.Add(ctx, "ns", v, "b", clk.now().Add(time.Hour)))
	require.NoError(t, idx.Add(ctx, "ns", []float32{0, 1}, "c", clk.now().Add(time.Hour)))
	key, _, ok, err := idx.Nearest(ctx, "ns", v, 0.9)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "b", key, "a was dropped for the cap")
	clk.add(2 * time.Hour)
	_, _, ok, err = idx.Nearest(ctx, "ns", v, 0)
	require.NoError(t, err)
	require.False(t, ok, "expired")
	_, _, ok, err = idx.Nearest(ctx, "other", v, 0)
	require.NoError(t, err)
	require.False(t, ok)
}

// A semantic group's exact hit neither embeds nor reads the prompt (its
// namespace is read only when the exact lookup misses); a plan that only
// stores (no-cache) embeds its prompt at the store, and a paraphrase then
// hits it.
func TestSemanticLazyParts(t *testing.T) {
	ctx := context.Background()
	c := New(NewMemory(0, 0, nil), WithIndex(NewMemoryIndex(0, nil)))
	emb := &fakeEmbedder{}
	pol := Policy{Mode: ModeSemantic, EmbeddingModel: "emb", Threshold: 0.8}
	r := Request{API: APIChat, Model: "gpt", Body: []byte(chatBody), Tenant: tenantA, CacheControl: "no-cache"}
	p, err := NewPlan(&r, &pol)
	require.NoError(t, err)
	require.NotEmpty(t, p.Namespace, "looking nothing up, the plan reads its parts at once")
	h, err := c.Lookup(ctx, &p, emb)
	require.NoError(t, err)
	require.Nil(t, h)
	require.NoError(t, c.Store(ctx, &p, &Entry{Body: readReply(t, "chat_text")}, emb))
	require.Equal(t, 1, emb.calls, "embedded at the store")

	exactPlan := chatPlan(t, chatBody, false, tenantA, pol)
	require.True(t, exactPlan.Semantic)
	require.Empty(t, exactPlan.Namespace)
	h, err = c.Lookup(ctx, exactPlan, emb)
	require.NoError(t, err)
	require.NotNil(t, h)
	require.False(t, h.Semantic)
	require.Empty(t, exactPlan.Namespace, "an exact hit reads no prompt")
	require.Nil(t, exactPlan.sem.body, "nor keeps the body")
	require.Equal(t, 1, emb.calls)

	para := `{"model":"gpt","temperature":0,"messages":[{"role":"user","content":"France: its capital?"}]}`
	h, err = c.Lookup(ctx, chatPlan(t, para, false, tenantA, pol), emb)
	require.NoError(t, err)
	require.NotNil(t, h)
	require.True(t, h.Semantic)
}
