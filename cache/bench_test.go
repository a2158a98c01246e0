package cache

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// The cache's own CPU per request on the chat/64 shape of bench/run.sh (a
// short deterministic chat request, a ~600-byte reply), in process: what a
// miss adds to an uncached request (plan, lookup, store) and what a hit
// costs instead of the upstream round trip (plan, lookup, render).

var benchReply = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1760000000,"model":"mock-gpt",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"` + string(make64()) + `"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":64,"total_tokens":76}}`)

func make64() []byte {
	b := make([]byte, 0, 64*6)
	for i := range 64 {
		b = fmt.Appendf(b, "w%d ", i%10)
	}
	return b
}

func benchRequest(i int, stream bool) *Request {
	return &Request{
		API: APIChat, Model: "demo", Stream: stream,
		Body:   fmt.Appendf(nil, `{"model":"demo","temperature":0,"max_tokens":64,"messages":[{"role":"user","content":"say hello %d"}]}`, i),
		Tenant: Tenant{Org: "o", Team: "t", Key: "k"},
	}
}

// BenchmarkMiss is a cached group's miss as the gateway makes it: the plan
// (canonical key), a lookup that finds nothing and the store of the reply,
// each request's prompt new (its number written in place, so that the
// harness itself allocates nothing and allocs/op are the cache's own).
func BenchmarkMiss(b *testing.B) {
	c := New(NewMemory(0, 0, time.Now))
	pol := &Policy{Mode: ModeExact}
	ctx := context.Background()
	body := []byte(`{"model":"demo","temperature":0,"max_tokens":64,"messages":[{"role":"user","content":"say hello 0000000000000000"}]}`)
	num := bytes.Index(body, []byte("0000000000000000"))
	req := Request{API: APIChat, Model: "demo", Body: body, Tenant: Tenant{Org: "o", Team: "t", Key: "k"}}
	e := Entry{Body: benchReply, Usage: kernel.Usage{Input: 12, Output: 64}, Cost: 1000}
	b.ReportAllocs()
	var n uint64
	start := selfCPU(b)
	for b.Loop() {
		n++
		for i, v := 0, n; i < 16; i, v = i+1, v>>4 {
			body[num+15-i] = "0123456789abcdef"[v&15]
		}
		p, err := NewPlan(&req, pol)
		if err != nil {
			b.Fatal(err)
		}
		if h, _ := c.Lookup(ctx, &p, nil); h != nil {
			b.Fatal("hit")
		}
		if err := c.Store(ctx, &p, &e, nil); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// selfCPU is the process's CPU time (every thread, the collector's
// included): on a shared machine the wall time per operation says more of
// the neighbours than of the code.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per operation since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
}

func BenchmarkHit(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) { benchHit(b, stream, &Policy{Mode: ModeExact}) })
	}
	// An exact hit of a semantic group (no embedding: the exact key hits).
	b.Run("semantic-group", func(b *testing.B) {
		benchHit(b, false, &Policy{Mode: ModeSemantic, EmbeddingModel: "emb"})
	})
}

func benchHit(b *testing.B, stream bool, pol *Policy) {
	c := New(NewMemory(0, 0, time.Now), WithIndex(NewMemoryIndex(0, time.Now)))
	ctx := context.Background()
	p, _ := NewPlan(benchRequest(0, false), pol)
	if err := c.Store(ctx, &p, &Entry{Body: benchReply, Usage: kernel.Usage{Input: 12, Output: 64}, Cost: 1000}, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := selfCPU(b)
	for b.Loop() {
		p, err := NewPlan(benchRequest(0, stream), pol)
		if err != nil {
			b.Fatal(err)
		}
		if h, _ := c.Lookup(ctx, &p, nil); h == nil {
			b.Fatal("miss")
		}
	}
	reportCPU(b, start)
}

// BenchmarkNearest is the in-process index's lookup in a full namespace
// (DefaultPerNamespace vectors of 64 dimensions, bench/run.sh
// CACHE=semantic): a scan of every vector.
func BenchmarkNearest(b *testing.B) {
	idx := NewMemoryIndex(0, time.Now)
	ctx := context.Background()
	exp := time.Now().Add(time.Hour)
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, 64)
		for i := range v {
			v[i] = 2*rng.Float32() - 1
		}
		return v
	}
	for i := range DefaultPerNamespace {
		if err := idx.Add(ctx, "ns", vec(), fmt.Sprint(i), exp); err != nil {
			b.Fatal(err)
		}
	}
	q := vec()
	b.ReportAllocs()
	start := selfCPU(b)
	for b.Loop() {
		if _, _, _, err := idx.Nearest(ctx, "ns", q, 0.95); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}
