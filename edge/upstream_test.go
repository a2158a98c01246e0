package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/internal/mockllm"
)

// tlsUpstream is an HTTPS server (HTTP/2 offered by ALPN) whose certificate
// names example.com; it reports the SNI and protocol of each request.
func tlsUpstream(t *testing.T) (addr, caFile string) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"sni": r.TLS.ServerName, "proto": r.ProtoMajor, "host": r.Host})
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	return srv.Listener.Addr().String(), caFile
}

func TestUpstreamTLS(t *testing.T) {
	addr, ca := tlsUpstream(t)
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()),
		routes(deployment{id: "h2", host: "api.example.com"}, deployment{id: "h1", host: "api.example.com"}, deployment{id: "badsan", host: "x"}, deployment{id: "untrusted", host: "x"}),
		upstreamCluster(t, "h2", addr, clusterOpts{auto: true, tlsSNI: "example.com", trustedCA: ca, san: "example.com"}),
		upstreamCluster(t, "h1", addr, clusterOpts{tlsSNI: "example.com", trustedCA: ca}),
		upstreamCluster(t, "badsan", addr, clusterOpts{tlsSNI: "example.com", trustedCA: ca, san: "other.example"}),
		upstreamCluster(t, "untrusted", addr, clusterOpts{tlsSNI: "example.com", trustedCA: writeOtherCA(t)}),
	)
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	url := "http://" + e.Addr().String() + "/v1/chat/completions"
	c := client(t)

	resp, body := post(t, c, url, "h2", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"sni":"example.com","proto":2,"host":"api.example.com"}`, body)
	resp, body = post(t, c, url, "h1", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.JSONEq(t, `{"sni":"example.com","proto":1,"host":"api.example.com"}`, body)

	for _, id := range []string{"badsan", "untrusted"} {
		resp, body = post(t, c, url, id, `{}`)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, id)
		require.True(t, strings.HasPrefix(body, bodyConnectFailure), body)
	}
}

// writeOtherCA writes a self-signed CA that did not sign the upstream's
// certificate.
func writeOtherCA(t *testing.T) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "other.pem")
	require.NoError(t, os.WriteFile(f, selfSigned(t), 0o600))
	return f
}

func TestUpstreamH2CWithMockProvider(t *testing.T) {
	cfg := mockllm.DefaultConfig()
	cfg.Chunks = 4
	mock := mockllm.New(cfg)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- mock.Serve(ctx, lis) }()
	defer func() { cancel(); require.NoError(t, <-served) }()

	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "mock", host: "mock.local"}),
		upstreamCluster(t, "mock", lis.Addr().String(), clusterOpts{http2: true}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)

	req, err := http.NewRequest(http.MethodPost, "http://"+e.Addr().String()+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"one two three four"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-pick", "mock")
	req.Header.Set("authorization", "Bearer sk-provider")
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			events = append(events, d)
		}
	}
	require.NoError(t, sc.Err())
	require.Len(t, events, 1+4+1+1+1) // role, content, finish, usage, [DONE]
	require.Equal(t, "[DONE]", events[len(events)-1])
	require.Contains(t, events[len(events)-2], `"completion_tokens":16`)
	st := mock.Stats().Keys["sk-provider"]
	require.Equal(t, mockllm.Usage{Requests: 1, InputTokens: 5, OutputTokens: 16}, st)
}

func TestConnectFailureAndCircuitBreaker(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := lis.Addr().String()
	require.NoError(t, lis.Close())
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "dead", host: "x"}, deployment{id: "ghost", host: "x"}),
		upstreamCluster(t, "dead", dead, clusterOpts{}))
	proc := newFakeProc()
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(proc)), x)
	url := "http://" + e.Addr().String() + "/v1/chat/completions"
	resp, body := post(t, client(t), url, "dead", `{}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, bodyConnectFailure+"remote connection failure", body)
	// A route whose cluster is unknown: 503 as well.
	resp, _ = post(t, client(t), url, "ghost", `{}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

func TestIdleTimeout(t *testing.T) {
	a := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Reading the body to its end lets net/http notice the disconnect.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "slow", host: "x", idle: 150 * time.Millisecond}),
		upstreamCluster(t, "slow", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	t0 := time.Now()
	resp, body := post(t, client(t), "http://"+e.Addr().String()+"/v1/chat/completions", "slow", `{}`)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	require.Equal(t, bodyIdleTimeout, body)
	require.Less(t, time.Since(t0), 4*time.Second)
}

// A per-try timeout bounds an attempt until its response headers: then the
// request ends with Envoy's 504; a body slower than it is not cut.
func TestPerTryTimeout(t *testing.T) {
	a := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/slow-headers" {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		w.Header().Set("content-type", "text/plain")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		time.Sleep(400 * time.Millisecond)
		_, _ = io.WriteString(w, "late body")
	}))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "x", perTry: 150 * time.Millisecond}),
		upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	base := "http://" + e.Addr().String()
	t0 := time.Now()
	resp, body := post(t, client(t), base+"/slow-headers", "a", `{}`)
	require.Equal(t, http.StatusGatewayTimeout, resp.StatusCode)
	require.Equal(t, bodyTimeout, body)
	require.Less(t, time.Since(t0), 4*time.Second)

	resp, body = post(t, client(t), base+"/slow-body", "a", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "late body", body)
}

func TestShutdownDrainsInFlight(t *testing.T) {
	started := make(chan struct{})
	a := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		close(started)
		time.Sleep(300 * time.Millisecond)
		_, _ = io.WriteString(w, "data: late\n\n")
	}))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "x"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	url := "http://" + e.Addr().String() + "/v1/chat/completions"
	type result struct {
		status int
		body   string
	}
	done := make(chan result, 1)
	c := client(t)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
		req.Header.Set("x-pick", "a")
		resp, err := c.Do(req)
		if err != nil {
			done <- result{}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		done <- result{resp.StatusCode, string(b)}
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.Shutdown(ctx))
	r := <-done
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, "data: late\n\n", r.body)
	_, err := net.DialTimeout("tcp", e.Addr().String(), time.Second)
	require.Error(t, err, "no new connections after Shutdown")
}

func TestDownstreamH2C(t *testing.T) {
	a := upstream(t, named("a"))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "h"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	defer tr.CloseIdleConnections()
	resp, body := post(t, &http.Client{Transport: tr, Timeout: 10 * time.Second}, "http://"+e.Addr().String()+"/v1/x", "a", `{"h2":true}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, 2, resp.ProtoMajor)
	require.Contains(t, body, `"upstream":"a"`)
}

// TestRejectsUnsupportedConfig: an update the edge cannot play is NACKed
// and the previous configuration keeps serving.
func TestRejectsUnsupportedConfig(t *testing.T) {
	a := upstream(t, named("a"))
	x := startXDS(t)
	good := listener(t, 1<<20, extProcFilter())
	x.set(t, good, routes(deployment{id: "a", host: "h"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)

	bad := listener(t, 1<<20, extProcFilter())
	var hcm hcmv3.HttpConnectionManager
	require.NoError(t, bad.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm))
	hcm.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "envoy.filters.http.cors", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &corsv3.Cors{})}}}, hcm.HttpFilters...)
	bad.FilterChains[0].Filters[0].ConfigType = listenerTyped(t, &hcm)
	noEndpoints := upstreamCluster(t, "a", a, clusterOpts{})
	noEndpoints.LoadAssignment.Endpoints = nil
	x.set(t, bad, routes(deployment{id: "a", host: "h"}), noEndpoints)
	require.Eventually(t, func() bool { return len(x.nackList()) >= 2 }, 10*time.Second, 10*time.Millisecond)
	nacks := strings.Join(x.nackList(), "\n")
	require.Contains(t, nacks, "is not supported")
	require.Contains(t, nacks, "no endpoints")
	resp, body := post(t, client(t), "http://"+e.Addr().String()+"/v1/x", "a", `{}`)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, body, `"upstream":"a"`)
}

// TestLargeBodies: bodies bigger than the read buffers cross intact both
// ways (BUFFERED request and response).
func TestLargeBodies(t *testing.T) {
	a := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("content-type", "application/octet-stream")
		for range 3 {
			_, _ = w.Write(b)
		}
	}))
	x := startXDS(t)
	x.set(t, listener(t, 1<<20, extProcFilter()), routes(deployment{id: "a", host: "h"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)
	in := strings.Repeat("0123456789abcdef", 200<<10/16)
	resp, body := post(t, client(t), "http://"+e.Addr().String()+"/v1/x", "a", in)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, strings.Repeat(in, 3), body)
}

// A client that stops sending its body gets Envoy's 408 after the HCM's
// stream idle timeout (the route is chosen once the filter released the
// headers, after the body), on HTTP/1.1 and on h2c.
func TestRequestBodyIdleTimeout(t *testing.T) {
	a := upstream(t, named("a"))
	x := startXDS(t)
	l := listener(t, 1<<20, extProcFilter())
	var hcm hcmv3.HttpConnectionManager
	require.NoError(t, l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm))
	hcm.StreamIdleTimeout = durationpb.New(150 * time.Millisecond)
	l.FilterChains[0].Filters[0].ConfigType = listenerTyped(t, &hcm)
	x.set(t, l, routes(deployment{id: "a", host: "x"}), upstreamCluster(t, "a", a, clusterOpts{}))
	e := startEdge(t, extprocfilter.GRPC(extprocfiltertest.Direct(newFakeProc())), x)

	c, err := net.Dial("tcp", e.Addr().String())
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	t0 := time.Now()
	_, err = io.WriteString(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Pick: a\r\nContent-Length: 10\r\n\r\n{\"a\"")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	require.Equal(t, bodyIdleTimeout, string(body))
	require.Less(t, time.Since(t0), 4*time.Second)

	// h2c: the same through net/http's HTTP/2 server.
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p}
	defer tr.CloseIdleConnections()
	pr, pw := io.Pipe()
	defer func() { _ = pw.Close() }()
	go func() { _, _ = io.WriteString(pw, `{"a"`) }()
	req, err := http.NewRequest(http.MethodPost, "http://"+e.Addr().String()+"/v1/chat/completions", pr)
	require.NoError(t, err)
	req.Header.Set("x-pick", "a")
	resp, err = (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
}
