package edge

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkWaiting measures what a request keeps live while it waits for
// its provider: N requests are held by an upstream that answers only once
// all of them arrived; the heap after a collection, less the heap before
// they started, per request, is live-B/req (the edge, its filter and the
// fake processor's stream; the raw-socket client and upstream hold next to
// nothing), and the goroutine stacks likewise stack-B/req. N is above the
// filter's worker threshold, as in the rush. One iteration is one such
// round; the numbers are the last round's.
func BenchmarkWaiting(b *testing.B) {
	const n = 300
	up := startHoldingUpstream(b)
	x := startXDSBench(b)
	x.set(b, listener(b, 1<<20, extProcFilter()), routes(deployment{id: "m", host: "mock"}),
		upstreamCluster(b, "m", up.addr(), clusterOpts{}))
	e := New(newFakeProc().sync(), WithListenOverride("127.0.0.1:0"))
	actx, acancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.RunADS(actx, x.conn, nodeID) }()
	defer func() { acancel(); require.NoError(b, <-done); require.NoError(b, e.Shutdown(context.Background())) }()
	<-e.Ready()
	body := `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hello there, this is a prompt of a few words"}]}`
	req := "POST /v1/chat/completions HTTP/1.1\r\nhost: edge\r\nx-pick: m\r\ncontent-type: application/json\r\n" +
		"authorization: Bearer tg-0123456789abcdef\r\nuser-agent: bench/1.0\r\naccept: application/json\r\n" +
		"content-length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", e.Addr().String())
		require.NoError(b, err)
		conns[i] = c
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	var live, stack float64
	for b.Loop() {
		before, beforeStack := heapAfterGC()
		for _, c := range conns {
			_, err := io.WriteString(c, req)
			require.NoError(b, err)
		}
		up.waitFor(b, n)
		after, afterStack := heapAfterGC()
		live = float64(after-before) / n
		stack = float64(afterStack-beforeStack) / n
		up.release()
		for _, c := range conns {
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(b, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			require.Equal(b, http.StatusOK, resp.StatusCode)
		}
	}
	b.ReportMetric(live, "live-B/req")
	b.ReportMetric(stack, "stack-B/req")
}

func heapAfterGC() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// holdingUpstream answers every request with a small JSON reply, but only
// once released: each connection reads its request (with a small buffer)
// and waits.
type holdingUpstream struct {
	lis     net.Listener
	mu      sync.Mutex
	arrived int
	gate    chan struct{}
	changed chan struct{}
	wg      sync.WaitGroup
}

func startHoldingUpstream(b *testing.B) *holdingUpstream {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	u := &holdingUpstream{lis: lis, gate: make(chan struct{}), changed: make(chan struct{}, 1)}
	u.wg.Add(1)
	go u.accept()
	b.Cleanup(func() {
		_ = lis.Close()
		u.mu.Lock()
		select {
		case <-u.gate:
		default:
			close(u.gate)
		}
		u.mu.Unlock()
		u.wg.Wait()
	})
	return u
}

func (u *holdingUpstream) addr() string { return u.lis.Addr().String() }

func (u *holdingUpstream) accept() {
	defer u.wg.Done()
	for {
		c, err := u.lis.Accept()
		if err != nil {
			return
		}
		u.wg.Add(1)
		go u.serve(c)
	}
}

const holdingReply = `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`

func (u *holdingUpstream) serve(c net.Conn) {
	defer u.wg.Done()
	defer func() { _ = c.Close() }()
	br := bufio.NewReaderSize(c, 512)
	for {
		n := -1
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
			if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "content-length") {
				n, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
		if n > 0 {
			if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
				return
			}
		}
		u.mu.Lock()
		u.arrived++
		gate := u.gate
		u.mu.Unlock()
		select {
		case u.changed <- struct{}{}:
		default:
		}
		<-gate
		var out bytes.Buffer
		out.WriteString("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ")
		out.WriteString(strconv.Itoa(len(holdingReply)))
		out.WriteString("\r\n\r\n")
		out.WriteString(holdingReply)
		if _, err := c.Write(out.Bytes()); err != nil {
			return
		}
	}
}

// waitFor waits until n requests arrived since the last release.
func (u *holdingUpstream) waitFor(b *testing.B, n int) {
	b.Helper()
	for {
		u.mu.Lock()
		got := u.arrived
		u.mu.Unlock()
		if got >= n {
			return
		}
		<-u.changed
	}
}

// release answers the waiting requests and holds the next ones.
func (u *holdingUpstream) release() {
	u.mu.Lock()
	close(u.gate)
	u.gate, u.arrived = make(chan struct{}), 0
	u.mu.Unlock()
}
