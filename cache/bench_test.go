package cache

import (
	"context"
	"fmt"
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

func BenchmarkMiss(b *testing.B) {
	c := New(NewMemory(0, 0, time.Now))
	pol := &Policy{Mode: ModeExact}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		p, err := NewPlan(benchRequest(i, false), pol)
		if err != nil {
			b.Fatal(err)
		}
		if h, _ := c.Lookup(ctx, &p, nil); h != nil {
			b.Fatal("hit")
		}
		if err := c.Store(ctx, &p, &Entry{Body: benchReply, Usage: kernel.Usage{Input: 12, Output: 64}, Cost: 1000}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHit(b *testing.B) {
	for _, stream := range []bool{false, true} {
		b.Run(fmt.Sprintf("stream=%v", stream), func(b *testing.B) {
			c := New(NewMemory(0, 0, time.Now))
			pol := &Policy{Mode: ModeExact}
			ctx := context.Background()
			p, _ := NewPlan(benchRequest(0, false), pol)
			if err := c.Store(ctx, &p, &Entry{Body: benchReply, Usage: kernel.Usage{Input: 12, Output: 64}, Cost: 1000}, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				p, err := NewPlan(benchRequest(0, stream), pol)
				if err != nil {
					b.Fatal(err)
				}
				if h, _ := c.Lookup(ctx, &p, nil); h == nil {
					b.Fatal("miss")
				}
			}
		})
	}
}
