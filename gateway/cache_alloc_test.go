package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
	"github.com/tollgate-ai/tollgate/translate"
)

// missCache is the gateway's response cache for one group with an exact
// cache (in this process), and a request whose prompt's last 16 bytes are
// rewritten to make each lookup a miss.
func missCache(t testing.TB) (*responseCache, *extproc.CacheQuery, func(n uint64)) {
	ctx := context.Background()
	st := memstore.New()
	_, err := store.Put(ctx, st, "p", &store.Provider{ID: "p", Type: store.ProviderOpenAI, BaseURL: "http://upstream:8000/v1"}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "d", &store.Deployment{ID: "d", Provider: "p", ProviderModel: "m"}, -1)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "g", &store.ModelGroup{ID: "g", Deployments: []string{"d"}, Cache: &store.ModelCache{Mode: "exact", Match: "all"}}, -1)
	require.NoError(t, err)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	snap, err := buildSnapshot(ctx, st, nil, log, time.Now())
	require.NoError(t, err)
	cat := NewCatalog(time.Now)
	cat.Swap(snap)
	r := newGatewayCache(nil, nil, cat, time.Now, log)
	body := []byte(`{"model":"g","messages":[{"role":"user","content":"say hello 0000000000000000"}],"max_tokens":16}`)
	at := bytes.Index(body, []byte("0000000000000000"))
	q := &extproc.CacheQuery{API: translate.APIChat, Model: "g", Body: body, Principal: &extproc.Principal{KeyID: "k", TeamID: "t", OrgID: "o"}}
	number := func(n uint64) {
		for i := 15; i >= 0; i, n = i-1, n>>4 {
			body[at+i] = "0123456789abcdef"[n&15]
		}
	}
	return r, q, number
}

var missReply = []byte(`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`)

// A miss — the lookup and the store of its reply — allocates only the
// stored entry: the key is hashed from pooled buffers, the store's state is
// pooled and an in-process store takes no timer.
func TestCacheMissAllocations(t *testing.T) {
	r, q, number := missCache(t)
	ctx := context.Background()
	n := uint64(0)
	allocs := testing.AllocsPerRun(200, func() {
		n++
		number(n)
		res, err := r.Lookup(ctx, q)
		if err != nil || res.Status != "miss" || res.Store == nil {
			t.Fatalf("not a miss: %+v %v", res, err)
		}
		res.Store.Done(ctx, missReply, kernel.Usage{Input: 5, Output: 1}, 7)
	})
	require.LessOrEqual(t, allocs, 1.0)
	number(n)
	res, err := r.Lookup(ctx, q)
	require.NoError(t, err)
	require.Equal(t, "hit", res.Status, "the last reply was stored")
}

// BenchmarkCacheMiss is TestCacheMissAllocations's miss, timed.
func BenchmarkCacheMiss(b *testing.B) {
	r, q, number := missCache(b)
	ctx := context.Background()
	b.ReportAllocs()
	n := uint64(0)
	for b.Loop() {
		n++
		number(n)
		res, _ := r.Lookup(ctx, q)
		res.Store.Done(ctx, missReply, kernel.Usage{Input: 5, Output: 1}, 7)
	}
}
