package edge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	"github.com/tollgate-ai/tollgate/edge/h1/h1test"
)

// named is an upstream that answers with its name and what it received.
func named(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("content-type", "application/json")
		_, _ = fmt.Fprintf(w, `{"upstream":%q,"host":%q,"path":%q,"route":%q,"body":%q}`, name, r.Host, r.URL.RequestURI(), r.Header.Get("x-tollgate-route"), body)
	})
}

func post(t *testing.T, c *http.Client, url, pick, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("content-type", "application/json")
	if pick != "" {
		req.Header.Set("x-pick", pick)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, string(b)
}

// inProcess runs fn once per in-process transport: Sync (what `tollgate
// run` uses: the processor called in the request's goroutine) and Direct (a
// Process loop on its own goroutine).
func inProcess(t *testing.T, fn func(t *testing.T, connect func(*fakeProc) extprocfilter.Transport)) {
	t.Run("sync", func(t *testing.T) {
		fn(t, func(p *fakeProc) extprocfilter.Transport { return p.sync() })
	})
	t.Run("direct", func(t *testing.T) {
		fn(t, func(p *fakeProc) extprocfilter.Transport { return extprocfilter.GRPC(extprocfiltertest.Direct(p)) })
	})
}

func TestRoutesOnProcessorHeader(t *testing.T) {
	inProcess(t, testRoutesOnProcessorHeader)
}

func testRoutesOnProcessorHeader(t *testing.T, connect func(*fakeProc) extprocfilter.Transport) {
	a := upstream(t, named("a"))
	b := upstream(t, named("b"))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()),
		routes(deployment{id: "a", host: "api.a.example"}, deployment{id: "b", host: "api.b.example"}),
		upstreamCluster(t, "a", a, clusterOpts{}), upstreamCluster(t, "b", b, clusterOpts{}))
	proc := newFakeProc()
	e := startEdge(t, connect(proc), x)
	url := "http://" + e.Addr().String()
	c := client(t)

	resp, body := post(t, c, url+"/v1/chat/completions?x=1", "a", `{"model":"m"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"upstream":"a","host":"api.a.example","path":"/v1/chat/completions?x=1","route":"a","body":"{\"model\":\"m\"}"}`, body)

	resp, body = post(t, c, url+"/v1/embeddings", "b", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"upstream":"b"`)
	require.Contains(t, body, `"host":"api.b.example"`)

	// A request without a body is routed on the headers reply.
	resp, err := c.Get(url + "/v1/models")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "no x-pick: the catch-all")
	req, err := http.NewRequest(http.MethodGet, url+"/v1/models", nil)
	require.NoError(t, err)
	req.Header.Set("x-pick", "b")
	resp, err = c.Do(req)
	require.NoError(t, err)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Contains(t, string(got), `"upstream":"b"`)
}

func TestCatchAllAndImmediateResponse(t *testing.T) {
	inProcess(t, testCatchAllAndImmediateResponse)
}

func testCatchAllAndImmediateResponse(t *testing.T, connect func(*fakeProc) extprocfilter.Transport) {
	a := upstream(t, named("a"))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "a"}), upstreamCluster(t, "a", a, clusterOpts{}))
	proc := newFakeProc()
	e := startEdge(t, connect(proc), x)
	url := "http://" + e.Addr().String()
	c := client(t)

	resp, body := post(t, c, url+"/v1/chat/completions", "nope", `{}`)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("content-type"))
	require.JSONEq(t, notFoundBody, body)
	// The direct response went through the processor's response direction.
	require.Eventually(t, func() bool {
		proc.mu.Lock()
		defer proc.mu.Unlock()
		for _, c := range proc.chunks {
			if string(c) == notFoundBody {
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond)

	resp, body = post(t, c, url+"/v1/chat/completions", "deny", `{}`)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.JSONEq(t, `{"error":"denied"}`, body)

	// On the wire, local replies name their headers in lower case like
	// proxied responses (and Envoy).
	raw := h1test.Dial(t, e.Addr().String())
	raw.Send(t, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Pick: deny\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
	wire, err := io.ReadAll(raw.BR)
	require.NoError(t, err)
	head, _, _ := strings.Cut(string(wire), "\r\n\r\n")
	require.Contains(t, head, "HTTP/1.1 401 ")
	for _, line := range strings.Split(head, "\r\n")[1:] {
		name, _, _ := strings.Cut(line, ":")
		require.Equal(t, strings.ToLower(name), name, "header line %q", line)
	}
}

func TestRequestBodyLimit(t *testing.T) {
	var hits atomic.Int64
	a := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	x := startXDS(t)
	x.set(t, listener(t, 1024, extProcFilter()), routes(deployment{id: "a", host: "a"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	c := client(t)
	resp, _ := post(t, c, "http://"+e.Addr().String()+"/v1/chat/completions", "a", strings.Repeat("x", 4096))
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	resp, _ = post(t, c, "http://"+e.Addr().String()+"/v1/chat/completions", "a", strings.Repeat("x", 1000))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, int64(1), hits.Load())
}

// TestStreamsChunkByChunk: every SSE event reaches the client while the
// upstream is still holding the rest of the stream.
func TestStreamsChunkByChunk(t *testing.T) {
	inProcess(t, testStreamsChunkByChunk)
}

func testStreamsChunkByChunk(t *testing.T, connect func(*fakeProc) extprocfilter.Transport) {
	const events = 4
	gate := make(chan struct{})
	a := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		for i := range events {
			_, _ = fmt.Fprintf(w, "data: {\"n\":%d}\n\n", i)
			w.(http.Flusher).Flush()
			<-gate // the client must have seen event i before i+1 is written
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "a"}), upstreamCluster(t, "a", a, clusterOpts{}))
	proc := newFakeProc()
	e := startEdge(t, connect(proc), x)

	req, err := http.NewRequest(http.MethodPost, "http://"+e.Addr().String()+"/v1/chat/completions", strings.NewReader(`{"stream":true}`))
	require.NoError(t, err)
	req.Header.Set("x-pick", "a")
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("content-length"))
	rd := bufio.NewReader(resp.Body)
	for i := range events {
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("data: {\"n\":%d}\n", i), line)
		_, err = rd.ReadString('\n')
		require.NoError(t, err)
		gate <- struct{}{}
	}
	rest, err := io.ReadAll(rd)
	require.NoError(t, err)
	require.Equal(t, "data: [DONE]\n\n", string(rest))
	// The processor saw the body in STREAMED chunks, not one buffer.
	proc.mu.Lock()
	defer proc.mu.Unlock()
	require.GreaterOrEqual(t, len(proc.chunks), events)
}

// TestClientDisconnect: the upstream request is cancelled and the ext_proc
// stream ends, so the processor can settle; with the processor in-process
// (called, or on its own goroutine) and over gRPC.
func TestClientDisconnect(t *testing.T) {
	for _, name := range []string{"sync", "direct", "grpc", "sync/h2c"} {
		via, h2c := strings.CutSuffix(name, "/h2c")
		t.Run(name, func(t *testing.T) {
			cancelled := make(chan struct{})
			a := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("content-type", "text/event-stream")
				_, _ = fmt.Fprint(w, "data: first\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					close(cancelled)
				case <-t.Context().Done(): // failed: let the server close
				}
			}))
			x := startXDS(t)
			x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "a"}), upstreamCluster(t, "a", a, clusterOpts{}))
			proc := newFakeProc()
			client := map[string]func() extprocfilter.Transport{
				"sync":   proc.sync,
				"direct": func() extprocfilter.Transport { return extprocfilter.GRPC(extprocfiltertest.Direct(proc)) },
				"grpc":   func() extprocfilter.Transport { return grpcProcessor(t, proc) },
			}[via]()
			e := startEdge(t, client, x)

			ctx, cancel := context.WithCancel(context.Background())
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+e.Addr().String()+"/v1/chat/completions", strings.NewReader(`{"stream":true}`))
			require.NoError(t, err)
			req.Header.Set("x-pick", "a")
			tr := &http.Transport{}
			if h2c { // net/http's HTTP/2 server: the request's end comes from its context
				tr.Protocols = new(http.Protocols)
				tr.Protocols.SetUnencryptedHTTP2(true)
			}
			defer tr.CloseIdleConnections()
			resp, err := (&http.Client{Transport: tr}).Do(req)
			require.NoError(t, err)
			defer func() { _ = resp.Body.Close() }()
			require.Equal(t, map[bool]int{false: 1, true: 2}[h2c], resp.ProtoMajor)
			line, err := bufio.NewReader(resp.Body).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "data: first\n", line)
			cancel()
			select {
			case <-cancelled:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream request was not cancelled")
			}
			select {
			case err := <-proc.ended:
				require.Error(t, err, "Envoy resets the ext_proc stream on a downstream reset")
			case <-time.After(5 * time.Second):
				t.Fatal("the ext_proc stream did not end")
			}
		})
	}
}

// grpcProcessor serves p over gRPC on loopback and returns a client of it.
func grpcProcessor(t *testing.T, p extprocv3.ExternalProcessorServer) extprocfilter.Transport {
	t.Helper()
	g := grpc.NewServer()
	extprocv3.RegisterExternalProcessorServer(g, p)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		g.Stop()
	})
	return extprocfilter.GRPC(extprocv3.NewExternalProcessorClient(conn))
}

func TestGRPCProcessor(t *testing.T) {
	a := upstream(t, named("a"))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "grpc.example"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, grpcProcessor(t, newFakeProc()), x)
	resp, body := post(t, client(t), "http://"+e.Addr().String()+"/v1/chat/completions", "a", `{"over":"grpc"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `"host":"grpc.example"`)
	require.Contains(t, body, `"route":"a"`)
	resp, _ = post(t, client(t), "http://"+e.Addr().String()+"/v1/chat/completions", "deny", `{}`)
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func TestADSUpdateSwitchesRouting(t *testing.T) {
	a := upstream(t, named("a"))
	b := upstream(t, named("b"))
	x := startXDS(t)
	l := listener(t, 1<<20, extProcFilter())
	x.set(t, l, routes(deployment{id: "d", host: "h"}), upstreamCluster(t, "d", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	url := "http://" + e.Addr().String() + "/v1/chat/completions"
	c := client(t)
	_, body := post(t, c, url, "d", `{}`)
	require.Contains(t, body, `"upstream":"a"`)

	// The deployment moves to another endpoint; a new deployment appears.
	x.set(t, l, routes(deployment{id: "d", host: "h"}, deployment{id: "n", host: "n"}),
		upstreamCluster(t, "d", b, clusterOpts{}), upstreamCluster(t, "n", a, clusterOpts{}))
	// Clusters and routes arrive as separate updates (CDS, then RDS), each
	// applied atomically.
	require.Eventually(t, func() bool {
		_, d := post(t, c, url, "d", `{}`)
		_, n := post(t, c, url, "n", `{}`)
		return strings.Contains(d, `"upstream":"b"`) && strings.Contains(n, `"upstream":"a"`)
	}, 10*time.Second, 20*time.Millisecond)
	require.Empty(t, x.nackList())
}

// TestWithoutExtProc: a listener whose chain is only the router forwards
// requests untouched, routed on the client's own headers.
func TestWithoutExtProc(t *testing.T) {
	a := upstream(t, named("a"))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, nil), routes(deployment{id: "a", host: "plain"}), upstreamCluster(t, "a", a, clusterOpts{}))
	proc := newFakeProc()
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(proc)), x)
	req, err := http.NewRequest(http.MethodPost, "http://"+e.Addr().String()+"/v1/x", strings.NewReader(strings.Repeat("y", 3<<20)))
	require.NoError(t, err)
	req.Header.Set("x-tollgate-route", "a")
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, "no ext_proc, no body limit")
	require.Contains(t, string(body), `"host":"plain"`)
	proc.mu.Lock()
	defer proc.mu.Unlock()
	require.Zero(t, proc.streams)
}
