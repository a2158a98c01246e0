package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/cache"
	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// postWith posts a chat request with extra headers.
func (r *running) postWith(t *testing.T, key, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b
}

// An exact-cache group: the first deterministic request goes to the
// provider (miss), the same request again is answered by the gateway (hit)
// — as the plain body or as a stream — and the provider sees nothing;
// Cache-Control no-cache and another key's request go upstream; a hit is
// settled at $0 in the ledger with what it saved.
func TestGatewayCacheExact(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		name := "in-process"
		if overGRPC {
			name = "grpc"
		}
		t.Run(name, func(t *testing.T) {
			r := start(t, overGRPC)
			put(t, r.st, "demo", &store.ModelGroup{ID: "demo", Deployments: []string{"mock-1"}, Cache: &store.ModelCache{Mode: "exact"}})
			k1 := r.key(t, "k1", kernel.Limits{})
			k2 := r.key(t, "k2", kernel.Limits{})
			r.warm(t, r.key(t, "k0", kernel.Limits{}), `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)

			body := `{"model":"demo","temperature":0,"messages":[{"role":"user","content":"cache me please"}],"max_tokens":5}`
			upstream := func() int64 { return r.mock.Stats().Total.Requests }
			n0 := upstream()

			resp, first := r.postWith(t, k1, body, nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(first))
			require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"))
			require.Equal(t, n0+1, upstream())

			resp, again := r.postWith(t, k1, strings.Replace(body, `"temperature":0`, `"temperature":0.0,"user":"someone"`, 1), nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(again))
			require.Equal(t, "hit", resp.Header.Get("x-tollgate-cache"))
			require.NotEmpty(t, resp.Header.Get("age"))
			require.Equal(t, "application/json", resp.Header.Get("content-type"))
			require.Equal(t, "0.000000000", resp.Header.Get("x-tollgate-cost"))
			require.Equal(t, string(first), string(again))
			require.Equal(t, n0+1, upstream(), "the provider received no request on a hit")

			// The same request streamed: a well-formed chat stream.
			resp, stream := r.postWith(t, k1, strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1), nil)
			require.Equal(t, http.StatusOK, resp.StatusCode, string(stream))
			require.Equal(t, "hit", resp.Header.Get("x-tollgate-cache"))
			require.Equal(t, "text/event-stream", resp.Header.Get("content-type"))
			require.True(t, strings.HasSuffix(string(stream), "data: [DONE]\n\n"), string(stream))
			require.Contains(t, string(stream), `"object":"chat.completion.chunk"`)
			require.Contains(t, string(stream), `"choices":[],"usage":{`)
			require.Equal(t, n0+1, upstream())

			resp, _ = r.postWith(t, k1, body, map[string]string{"Cache-Control": "no-cache"})
			require.Equal(t, "skip", resp.Header.Get("x-tollgate-cache"))
			require.Equal(t, n0+2, upstream())
			resp, _ = r.postWith(t, k2, body, nil)
			require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"), "scoped by key")
			require.Equal(t, n0+3, upstream())
			resp, _ = r.postWith(t, k1, strings.Replace(body, `"temperature":0`, `"temperature":1`, 1), nil)
			require.Equal(t, "skip", resp.Header.Get("x-tollgate-cache"), "not deterministic")

			resp, b := r.postWith(t, k1, body, map[string]string{"x-tollgate-cache-ttl": "forever"})
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var e struct {
				Error struct{ Message, Type, Param string }
			}
			require.NoError(t, json.Unmarshal(b, &e), string(b))
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.Contains(t, e.Error.Message, "x-tollgate-cache-ttl")

			require.NoError(t, r.st.Flush(context.Background()))
			var hits, misses []store.LedgerEntry
			for _, e := range completed(t, r.st) {
				if e.KeyID != "k1" {
					continue
				}
				if e.Deployment == "" {
					hits = append(hits, e)
				} else {
					misses = append(misses, e)
				}
			}
			require.Len(t, hits, 2)
			require.NotEmpty(t, misses)
			require.Positive(t, misses[0].Cost)
			require.Equal(t, store.CacheMiss, misses[0].Cache)
			require.Zero(t, misses[0].CacheSaved)
			for _, h := range hits {
				require.Zero(t, h.Cost)
				require.Zero(t, h.Usage.Total())
				require.Equal(t, store.CacheHit, h.Cache, "a row of its own kind")
				require.Equal(t, misses[0].Cost, h.CacheSaved, "what the reply cost when it was stored")
			}
			require.Equal(t, store.CacheSkip, misses[1].Cache, "no-cache")
			// The hourly totals count them: 2 hits, 1 miss (the skips are neither).
			points, err := r.st.Series(context.Background(), kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"},
				time.Now().Add(-2*time.Hour).Truncate(time.Hour), time.Now().Add(time.Hour).Truncate(time.Hour), time.Hour)
			require.NoError(t, err)
			var cc store.CacheCounts
			for _, p := range points {
				cc.Add(p.Cache)
			}
			require.Equal(t, store.CacheCounts{Hits: 2, Misses: 1, Saved: 2 * misses[0].Cost}, cc)
		})
	}
}

// A reply first seen as a stream is stored, and the same request as a plain
// one is answered from it.
func TestGatewayCacheStreamedMiss(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "demo", &store.ModelGroup{ID: "demo", Deployments: []string{"mock-1"}, Cache: &store.ModelCache{Mode: "exact", Match: "all"}})
	k := r.key(t, "k1", kernel.Limits{})
	r.warm(t, k, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	body := `{"model":"demo","messages":[{"role":"user","content":"stream then plain"}],"max_tokens":6}`
	n0 := r.mock.Stats().Total.Requests
	resp, b := r.postWith(t, k, strings.Replace(body, "{", `{"stream":true,`, 1), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"))
	resp, plain := r.postWith(t, k, body, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(plain))
	require.Equal(t, "hit", resp.Header.Get("x-tollgate-cache"))
	var c struct {
		Object  string
		Choices []struct {
			Message struct{ Content string }
			Finish  string `json:"finish_reason"`
		}
		Usage struct {
			Completion int64 `json:"completion_tokens"`
		}
	}
	require.NoError(t, json.Unmarshal(plain, &c), string(plain))
	require.Equal(t, "chat.completion", c.Object)
	require.Len(t, c.Choices, 1)
	require.NotEmpty(t, c.Choices[0].Message.Content)
	require.NotEmpty(t, c.Choices[0].Finish)
	require.Positive(t, c.Usage.Completion, "the usage the gateway settled, though the client asked for none")
	require.Equal(t, n0+1, r.mock.Stats().Total.Requests)
}

// Two replicas on one Redis share the cache: a reply stored by one is a hit
// on the other.
func TestReplicasShareCacheThroughRedis(t *testing.T) {
	ro, err := goredis.ParseURL(testenv.Redis(t))
	require.NoError(t, err)
	st := memstore.New()
	prefix := fmt.Sprintf("gw-cache-test-%d:", time.Now().UnixNano())
	var replicas []*running
	for range 2 {
		client := goredis.NewClient(ro)
		t.Cleanup(func() { _ = client.Close() })
		replicas = append(replicas, startWith(t, false, st, nil, func(_ *gateway.Config, o *gateway.Options) {
			o.Cache = cache.NewRedis(client, prefix, 0)
		}))
	}
	a, b := replicas[0], replicas[1]
	put(t, st, "demo", &store.ModelGroup{ID: "demo", Deployments: []string{"mock-1"}, Cache: &store.ModelCache{Mode: "exact", Scope: "org"}})
	k := a.key(t, "k1", kernel.Limits{})
	for _, r := range replicas {
		r.warm(t, k, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	}
	upstream := func() int64 { return a.mock.Stats().Total.Requests + b.mock.Stats().Total.Requests }
	body := `{"model":"demo","temperature":0,"messages":[{"role":"user","content":"shared across replicas"}],"max_tokens":4}`
	n0 := upstream()
	resp, first := a.postWith(t, k, body, nil)
	require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"), string(first))
	resp, second := b.postWith(t, k, body, nil)
	require.Equal(t, "hit", resp.Header.Get("x-tollgate-cache"), string(second))
	require.Equal(t, string(first), string(second))
	require.Equal(t, n0+1, upstream())
}

// A semantic group: the prompt is embedded through the embedding group on
// behalf of the key (admitted, settled, in the ledger); a request whose
// exact key differs but whose prompt embeds the same is a semantic hit; a
// different prompt, or another key, misses.
func TestGatewayCacheSemantic(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "emb", &store.ModelGroup{ID: "emb", Deployments: []string{"mock-1"}})
	put(t, r.st, "emb", &store.ModelPrice{ID: "emb", Price: kernel.Price{Input: kernel.Dollar}})
	put(t, r.st, "demo", &store.ModelGroup{ID: "demo", Deployments: []string{"mock-1"}, Cache: &store.ModelCache{Mode: "semantic", EmbeddingModel: "emb", Threshold: 0.99}})
	k1 := r.key(t, "k1", kernel.Limits{})
	k2 := r.key(t, "k2", kernel.Limits{})
	r.warm(t, r.key(t, "k0", kernel.Limits{}), `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	n0 := r.mock.Stats().Total.Requests

	plain := `{"model":"demo","temperature":0,"max_tokens":4,"messages":[{"role":"user","content":"what does a gateway do"}]}`
	parts := `{"model":"demo","temperature":0,"max_tokens":4,"messages":[{"role":"user","content":[{"type":"text","text":"what does a gateway do"}]}]}`
	resp, first := r.postWith(t, k1, plain, nil)
	require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"), string(first))
	require.Equal(t, n0+2, r.mock.Stats().Total.Requests, "one embedding, one chat")

	resp, second := r.postWith(t, k1, parts, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(second))
	require.Equal(t, "hit; semantic; score=1.000", resp.Header.Get("x-tollgate-cache"))
	require.Equal(t, string(first), string(second))
	require.Equal(t, n0+3, r.mock.Stats().Total.Requests, "the embedding only")

	resp, _ = r.postWith(t, k1, strings.Replace(plain, "what does a gateway do", "name a prime number", 1), nil)
	require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"))
	resp, _ = r.postWith(t, k2, parts, nil)
	require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"), "another key's scope")

	require.NoError(t, r.st.Flush(context.Background()))
	var embeds int
	for _, e := range completed(t, r.st) {
		if e.KeyID == "k1" && e.Model == "emb" {
			embeds++
			require.Positive(t, e.Cost, "the key pays its embeddings")
		}
	}
	require.Equal(t, 3, embeds)
}

// A group routed per try (two deployments): the router-level stream looks
// up, the try that serves the request stores; the reply says miss, then hit.
func TestGatewayCachePerTry(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "mock-2", &store.Deployment{ID: "mock-2", Provider: "mock", ProviderModel: "mock-gpt"})
	put(t, r.st, "demo", &store.ModelGroup{ID: "demo", Deployments: []string{"mock-1", "mock-2"}, Cache: &store.ModelCache{Mode: "exact"}})
	k := r.key(t, "k1", kernel.Limits{})
	r.warm(t, k, `{"model":"demo","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	body := `{"model":"demo","temperature":0,"messages":[{"role":"user","content":"per try"}],"max_tokens":4}`
	n0 := r.mock.Stats().Total.Requests
	for _, stream := range []bool{false, true} {
		b := body
		if stream {
			b = strings.Replace(body, "per try", "per try streamed", 1)
			b = strings.Replace(b, "{", `{"stream":true,`, 1)
		}
		resp, first := r.postWith(t, k, b, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(first))
		require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"))
		resp, second := r.postWith(t, k, b, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, string(second))
		require.Equal(t, "hit", resp.Header.Get("x-tollgate-cache"))
		if !stream {
			require.Equal(t, string(first), string(second))
		}
	}
	require.Equal(t, n0+2, r.mock.Stats().Total.Requests)
}

// A group's price per hit is charged on the hit's row (one unit at that
// price) and reported in x-tollgate-cost; with count_hits the hit's row
// carries the stored reply's tokens (it counts for tpm), without it none.
func TestGatewayCacheHitPriceAndCountHits(t *testing.T) {
	r := start(t, false)
	put(t, r.st, "priced", &store.ModelGroup{ID: "priced", Deployments: []string{"mock-1"}, Cache: &store.ModelCache{Mode: "exact", HitPrice: 250_000 * kernel.NanoUSD}})
	put(t, r.st, "counted", &store.ModelGroup{ID: "counted", Deployments: []string{"mock-1"}, Cache: &store.ModelCache{Mode: "exact", CountHits: true}})
	both := &store.ModelCache{Mode: "exact", HitPrice: 250_000 * kernel.NanoUSD, CountHits: true}
	require.NoError(t, both.Validate(), "count_hits with a hit_price")
	put(t, r.st, "both", &store.ModelGroup{ID: "both", Deployments: []string{"mock-1"}, Cache: both})
	for _, id := range []string{"priced", "counted", "both"} {
		put(t, r.st, id, &store.ModelPrice{ID: id, Price: kernel.Price{Input: kernel.Dollar, Output: 2 * kernel.Dollar}})
	}
	k := r.key(t, "k1", kernel.Limits{})
	r.warm(t, k, `{"model":"priced","messages":[{"role":"user","content":"warm"}],"max_tokens":2}`)
	rows := map[string][]store.LedgerEntry{}
	for _, model := range []string{"priced", "counted", "both"} {
		body := `{"model":"` + model + `","temperature":0,"messages":[{"role":"user","content":"price me"}],"max_tokens":5}`
		resp, b := r.postWith(t, k, body, nil)
		require.Equal(t, "miss", resp.Header.Get("x-tollgate-cache"), string(b))
		resp, b = r.postWith(t, k, body, nil)
		require.Equal(t, "hit", resp.Header.Get("x-tollgate-cache"), string(b))
		if model != "counted" {
			require.Equal(t, "0.000250000", resp.Header.Get("x-tollgate-cost"))
		} else {
			require.Equal(t, "0.000000000", resp.Header.Get("x-tollgate-cost"))
		}
	}
	require.NoError(t, r.st.Flush(context.Background()))
	for _, e := range completed(t, r.st) {
		if e.Cache == store.CacheMiss || e.Cache.Hit() {
			rows[e.Model] = append(rows[e.Model], e)
		}
	}
	for _, model := range []string{"priced", "counted", "both"} {
		require.Len(t, rows[model], 2, model)
		miss, hit := rows[model][0], rows[model][1]
		require.Equal(t, store.CacheMiss, miss.Cache)
		require.Equal(t, store.CacheHit, hit.Cache)
		require.Positive(t, miss.Cost, model)
		require.Equal(t, miss.Cost, hit.CacheSaved, model)
		require.Empty(t, hit.Deployment)
		switch model {
		case "priced":
			require.Equal(t, 250_000*kernel.NanoUSD, hit.Cost)
			require.Equal(t, kernel.Usage{Input: 1}, hit.Usage, "one unit at the hit's price")
		case "both":
			require.Equal(t, 250_000*kernel.NanoUSD, hit.Cost, "the price, not the tokens")
			require.Equal(t, miss.Usage.Total(), hit.Usage.Total(), "the stored reply's tokens, for tpm")
			require.Equal(t, kernel.Usage{Input: 1, Output: miss.Usage.Total() - 1}, hit.Usage, "the unit, then the other tokens at no price")
		default:
			require.Zero(t, hit.Cost)
			require.Positive(t, miss.Usage.Total())
			require.Equal(t, miss.Usage, hit.Usage, "the stored reply's tokens")
		}
	}
}
