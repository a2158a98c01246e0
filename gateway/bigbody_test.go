package gateway_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/gateway"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// bigBodies is how many requests TestBigBodiesCostAboutTheirSize sends at
// once, bigBodySize the size of each body.
const (
	bigBodies   = 4
	bigBodySize = 30 << 20
)

// bigBody is a chat request of exactly size bytes whose one message is
// generated as it is read: the test client holds none of it.
func bigBody(size int) io.Reader {
	head := []byte(`{"model":"big","max_tokens":5,"messages":[{"role":"user","content":"`)
	tail := []byte(`"}]}`)
	return io.MultiReader(bytes.NewReader(head), io.LimitReader(repeatByte('a'), int64(size-len(head)-len(tail))), bytes.NewReader(tail))
}

type repeatByte byte

func (r repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// heapInUse is the heap in use after a full collection, and the bytes
// allocated so far.
func heapInUse() (inUse, allocated uint64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.TotalAlloc
}

// Four 30 MiB request bodies at once: while they are in flight the gateway
// holds about one copy of each (not the six a growing buffer, the
// processor's rewrite and their garbage made), and once they are answered it
// holds none of them (no oversized buffer kept in a pool). Memory is read
// from runtime.MemStats after a collection, at two points the test controls:
// the provider has read the first MiB of every body and waits (so the
// gateway is in the middle of sending each), and every reply is in.
func TestBigBodiesCostAboutTheirSize(t *testing.T) {
	const total = bigBodies * bigBodySize
	// The provider: reads the first MiB of each body, waits until all four
	// got that far and the test measured, then reads the rest (discarding
	// it) and answers.
	var arrived sync.WaitGroup
	arrived.Add(bigBodies)
	release := make(chan struct{})
	var received atomic.Int64
	up := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength >= 1<<20 { // not the warm-up
			n, _ := io.CopyN(io.Discard, r.Body, 1<<20)
			arrived.Done()
			<-release
			m, _ := io.Copy(io.Discard, r.Body)
			received.Add(n + m)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"mock-gpt","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7864320,"completion_tokens":1,"total_tokens":7864321}}`)
	})}
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = up.Serve(ul) }()
	t.Cleanup(func() { _ = up.Close() })

	r := startWith(t, false, memstore.New(), nil, func(c *gateway.Config, _ *gateway.Options) {
		c.MaxBodyBytes = 32 << 20
	})
	put(t, r.st, "big", &store.Provider{ID: "big", Type: store.ProviderOpenAI, BaseURL: "http://" + ul.Addr().String() + "/v1"})
	put(t, r.st, "big-1", &store.Deployment{ID: "big-1", Provider: "big", ProviderModel: "mock-gpt"})
	put(t, r.st, "big", &store.ModelGroup{ID: "big", Deployments: []string{"big-1"}})
	put(t, r.st, "big", &store.ModelPrice{ID: "big", Price: kernel.Price{Input: 1, Output: 1}})
	key := r.key(t, "k-big", kernel.Limits{})
	eventually(t, func() bool {
		resp, _ := r.post(t, key, "/v1/chat/completions", `{"model":"big","messages":[{"role":"user","content":"hi"}]}`)
		return resp.StatusCode == http.StatusOK
	})
	base, alloc0 := heapInUse()

	statuses := make(chan string, bigBodies)
	for range bigBodies {
		go func() {
			req, err := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", bigBody(bigBodySize))
			if err != nil {
				statuses <- err.Error()
				return
			}
			req.ContentLength = bigBodySize
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			statuses <- strconv.Itoa(resp.StatusCode) + " " + string(b)
		}()
	}
	// A request that ends before reaching the provider (an error, a 413)
	// would leave the provider waiting: it fails the test instead.
	allArrived := make(chan struct{})
	go func() { arrived.Wait(); close(allArrived) }()
	select {
	case <-allArrived:
	case st := <-statuses:
		close(release)
		t.Fatalf("a request ended before the provider had all four: %s", st)
	}
	during, _ := heapInUse()
	during -= base
	close(release)
	for range bigBodies {
		require.Regexp(t, `^200 `, <-statuses)
	}
	// Every byte of every body, the model renamed (big → mock-gpt).
	require.Equal(t, int64(bigBodies*(bigBodySize+len("mock-gpt")-len("big"))), received.Load())
	inUse, alloc1 := heapInUse()
	after, allocated := int64(inUse)-int64(base), alloc1-alloc0
	t.Logf("big bodies: %d x %d MiB at once: heap in use %.1f MiB while in flight (%.2f x the bodies), %+.1f MiB after; %.0f MiB allocated in all (%.2f x)",
		bigBodies, bigBodySize>>20, float64(during)/(1<<20), float64(during)/total, float64(after)/(1<<20),
		float64(allocated)/(1<<20), float64(allocated)/total)
	require.LessOrEqual(t, during, uint64(2*total), "in flight: at most about one copy of each body (and not the growing buffer's garbage)")
	// The bytes allocated bound the garbage, which sets the heap's peak (the
	// collector lets the heap grow to twice what is live): the buffered body
	// and the processor's rewrite of it, not a buffer grown by doubling.
	require.LessOrEqual(t, allocated, uint64(3*total), "allocated: the body once, its rewrite once")
	require.Less(t, after, int64(total/8), "after: the bodies' buffers are released (%d bytes still in use)", after)
}
