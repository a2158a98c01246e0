package extproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
)

// The benchmarks run the processor in a child process (this test binary,
// re-executed with TOLLGATE_BENCH_SERVE set) so the server's CPU time can be
// read from /proc apart from the client's, and drive it as Envoy does. Run
// them with, e.g.:
//
//	go test ./extproc/ -run '^$' -bench 'NonStreamRequest|GRPCBaseline|StreamChunk' -benchtime 20000x
//
// Metrics: server-µs/op is the server process's user+system CPU per request
// (or per streamed chunk), client-µs/op the same for the benchmark process (the
// Envoy client); rtt-p50/p99-µs are client-observed round trips of one ext_proc
// message. TOLLGATE_BENCH_CPUPROFILE=file makes the server write its CPU
// profile there (go tool pprof file), TOLLGATE_BENCH_MEMPROFILE=file its
// profile of every allocation (go tool pprof -sample_index=alloc_objects file);
// TOLLGATE_BENCH_GOGC=n sets the server's GOGC alone (GOGC=n would set the
// client's too).

const (
	benchServeEnv = "TOLLGATE_BENCH_SERVE" // "tcp" or "unix:<path>"
	benchEchoEnv  = "TOLLGATE_BENCH_ECHO"  // serve echoProcessor instead
	benchLatEnv   = "TOLLGATE_BENCH_LAT"   // write the per-message histogram here
	benchProfEnv  = "TOLLGATE_BENCH_CPUPROFILE"
	benchGCEnv    = "TOLLGATE_BENCH_GOGC" // the server's GOGC, leaving the client's alone
	benchMemEnv   = "TOLLGATE_BENCH_MEMPROFILE"
)

// latencyHistogram counts per-message processing times in 1 µs buckets up to
// 50 ms (then one overflow bucket); lock-free.
type latencyHistogram struct{ b [50_001]atomic.Int64 }

func (h *latencyHistogram) add(d time.Duration) {
	h.b[min(int(d/time.Microsecond), len(h.b)-1)].Add(1)
}

func (h *latencyHistogram) encode() []byte {
	var sb strings.Builder
	for i := range h.b {
		if n := h.b[i].Load(); n > 0 {
			fmt.Fprintf(&sb, "%d %d\n", i, n)
		}
	}
	return []byte(sb.String())
}

// percentiles decodes an encoded histogram into the given quantiles, in µs.
func percentiles(raw []byte, qs ...float64) []float64 {
	type bucket struct{ us, n int64 }
	var bs []bucket
	var total int64
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		us, _ := strconv.ParseInt(f[0], 10, 64)
		n, _ := strconv.ParseInt(f[1], 10, 64)
		bs = append(bs, bucket{us, n})
		total += n
	}
	out := make([]float64, len(qs))
	for i, q := range qs {
		want := int64(q * float64(total))
		var seen int64
		for _, b := range bs {
			seen += b.n
			if seen > want {
				out[i] = float64(b.us)
				break
			}
		}
	}
	return out
}

// echoProcessor answers every message with an empty reply of the matching
// type: the cost of the gRPC transport alone. Like the processor, it switches
// an event-stream response to STREAMED, so that chunks flow.
type echoProcessor struct {
	extprocv3.UnimplementedExternalProcessorServer
}

func (echoProcessor) Process(srv extprocv3.ExternalProcessor_ProcessServer) error {
	for {
		req, err := srv.Recv()
		if err != nil {
			return nil
		}
		var r extprocv3.ProcessingResponse
		switch req.GetRequest().(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			r.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}
		case *extprocv3.ProcessingRequest_RequestBody:
			r.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			r.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}
			for _, h := range req.GetResponseHeaders().GetHeaders().GetHeaders() {
				if h.GetKey() == hdrContentType && isEventStream(headerValue(h)) {
					r.ModeOverride = &extprocfilterv3.ProcessingMode{
						RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
						ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
					}
				}
			}
		default:
			r.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}
		}
		if err := srv.Send(&r); err != nil {
			return nil
		}
	}
}

// benchAccountant admits everything and prices usage with kernel.Cost: the
// benchmark measures the processor, not the accounting backend.
type benchAccountant struct{}

func (benchAccountant) Admit(_ context.Context, req *kernel.AdmitRequest) (kernel.Decision, error) {
	return kernel.Decision{Admitted: true, MaxTokens: max(req.MaxTokens, req.DefaultMaxTokens)}, nil
}

func (benchAccountant) Settle(_ context.Context, rec *Record) (kernel.Money, error) {
	return kernel.Cost(testPrice, rec.Usage), nil
}

func (benchAccountant) RecordRefused(context.Context, *Record) error { return nil }

// TestBenchServe is the child side of the benchmarks; it is skipped unless the
// benchmark started it.
func TestBenchServe(t *testing.T) {
	mode := os.Getenv(benchServeEnv)
	if mode == "" {
		t.Skip("helper process for the benchmarks")
	}
	var lis net.Listener
	var err error
	if path, ok := strings.CutPrefix(mode, "unix:"); ok {
		lis, err = net.Listen("unix", path)
	} else {
		lis, err = net.Listen("tcp", "127.0.0.1:0")
	}
	require.NoError(t, err)
	p := New(newCatalog(), benchAccountant{})
	var hist latencyHistogram
	if f := os.Getenv(benchLatEnv); f != "" {
		p.observe = hist.add
		defer func() { require.NoError(t, os.WriteFile(f, hist.encode(), 0o600)) }()
	}
	if v := os.Getenv(benchGCEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		debug.SetGCPercent(n)
	}
	if f := os.Getenv(benchMemEnv); f != "" {
		runtime.MemProfileRate = 1 // every allocation: the counts are exact
		defer func() {
			out, err := os.Create(f)
			require.NoError(t, err)
			require.NoError(t, pprof.Lookup("allocs").WriteTo(out, 0))
			require.NoError(t, out.Close())
		}()
	}
	if f := os.Getenv(benchProfEnv); f != "" {
		out, err := os.Create(f)
		require.NoError(t, err)
		require.NoError(t, pprof.StartCPUProfile(out))
		defer func() { pprof.StopCPUProfile(); require.NoError(t, out.Close()) }()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // the parent asks for stats on stdin, and closes it to stop us
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			printStats()
		}
		cancel()
	}()
	fmt.Printf("ready %s\n", lis.Addr())
	if os.Getenv(benchEchoEnv) != "" {
		// Baseline: the same gRPC server settings, a processor that does nothing.
		srv := grpc.NewServer(serverOptions(p)...)
		extprocv3.RegisterExternalProcessorServer(srv, echoProcessor{})
		go func() { <-ctx.Done(); srv.Stop() }()
		_ = srv.Serve(lis)
		return
	}
	require.NoError(t, p.Serve(ctx, lis))
}

// benchServer is a processor in a child process.
type benchServer struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	target string
	cc     *grpc.ClientConn
	cli    extprocv3.ExternalProcessorClient
}

func startBenchServer(b *testing.B, network string, extraEnv ...string) *benchServer {
	b.Helper()
	mode := "tcp"
	if network == "unix" {
		mode = "unix:" + filepath.Join(b.TempDir(), "p.sock")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchServe$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), benchServeEnv+"="+mode), extraEnv...)
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	cmd.Stderr = os.Stderr
	require.NoError(b, cmd.Start())
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	require.NoError(b, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	s := &benchServer{cmd: cmd, stdin: stdin, stdout: out, target: addr}
	if network == "unix" {
		s.target = "unix://" + addr
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	s.cc = s.dial(b)
	s.cli = extprocv3.NewExternalProcessorClient(s.cc)
	return s
}

// dial opens a new HTTP/2 connection to the server, with Envoy's large
// flow-control windows; it is closed when b ends (before the server stops).
func (s *benchServer) dial(b *testing.B) *grpc.ClientConn {
	b.Helper()
	cc, err := grpc.NewClient(s.target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(connWindow))
	require.NoError(b, err)
	b.Cleanup(func() { _ = cc.Close() })
	return cc
}

// envoyClients returns n Envoy filter clients with the production filter
// configuration (spec §6), each on its own connection: Envoy's workers.
func (s *benchServer) envoyClients(b *testing.B, n int) []*extprocfilter.Client {
	b.Helper()
	out := make([]*extprocfilter.Client, n)
	for i := range out {
		out[i] = extprocfilter.NewClient(extprocfilter.GRPC(extprocv3.NewExternalProcessorClient(s.dial(b))), extprocfilter.DefaultConfig())
	}
	return out
}

// serverStats are the child's totals so far.
type serverStats struct {
	cpu           time.Duration // user+system
	allocs, bytes uint64        // heap allocations
}

// printStats answers the parent's "stats" line with the process's totals.
func printStats() {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	ms := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(ms)
	fmt.Printf("stats %d %d %d\n", ru.Utime.Nano()+ru.Stime.Nano(), ms[0].Value.Uint64(), ms[1].Value.Uint64())
}

// stats asks the child for its totals.
func (s *benchServer) stats(b *testing.B) serverStats {
	b.Helper()
	_, err := io.WriteString(s.stdin, "stats\n")
	require.NoError(b, err)
	line, err := s.stdout.ReadString('\n')
	require.NoError(b, err)
	var st serverStats
	var ns int64
	_, err = fmt.Sscanf(line, "stats %d %d %d", &ns, &st.allocs, &st.bytes)
	require.NoError(b, err, line)
	st.cpu = time.Duration(ns)
	return st
}

func hdrs(kv ...string) *corev3.HeaderMap {
	m := &corev3.HeaderMap{}
	for i := 0; i < len(kv); i += 2 {
		m.Headers = append(m.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	return m
}

// Pre-built Envoy messages of one chat request, as Envoy sends them.
var (
	benchReqBody  = []byte(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Write a haiku about gateways and tokens, please."}],"temperature":0.7,"max_tokens":256}`)
	benchReqHdrs  = reqHeadersMsg(len(benchReqBody), false)
	benchReqBodyM = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: benchReqBody, EndOfStream: true},
	}}
	benchRespHdrs = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdrs(":status", "200", "content-type", "application/json",
			"content-length", strconv.Itoa(len(chatResponse)), "date", "Mon, 30 Nov 2026 04:00:00 GMT", "x-request-id", "abc")},
	}}
	benchRespBody = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte(chatResponse), EndOfStream: true},
	}}
	benchSSEHdrs = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdrs(":status", "200", "content-type", "text/event-stream")},
	}}
	benchChunk = &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
		ResponseBody: &extprocv3.HttpBody{Body: []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" token"},"finish_reason":null}],"usage":null}` + "\n\n")},
	}}
)

func reqHeadersMsg(n int, stream bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: hdrs(
			":authority", "gateway.local", ":path", "/v1/chat/completions", ":method", "POST", ":scheme", "https",
			"content-type", "application/json", "content-length", strconv.Itoa(n),
			"authorization", "Bearer "+clientKey, "user-agent", "OpenAI/Python 1.99.0",
			"x-request-id", "5a0c6a5e-1f7e-4c1e-9d8e-000000000000", "x-forwarded-proto", "https")},
	}}
}

// roundTrip sends m and waits for the reply.
func roundTrip(st extprocv3.ExternalProcessor_ProcessClient, m *extprocv3.ProcessingRequest) error {
	if err := st.Send(m); err != nil {
		return err
	}
	r, err := st.Recv()
	if err != nil {
		return err
	}
	if r.GetImmediateResponse() != nil {
		return errors.New("unexpected immediate response")
	}
	return nil
}

// BenchmarkNonStreamRequest: one whole non-streamed chat request per op,
// driven the way Envoy drives the processor (extprocfilter, production filter
// config): request headers (authenticate), body (parse, resolve, admit,
// rewrite), response headers, body (usage, settle), then Envoy's half-close and
// reset. benchStreams requests are in flight at once over benchConns HTTP/2
// connections; streams=1 is an idle gateway, one request at a time.
func BenchmarkNonStreamRequest(b *testing.B) {
	benchNonStream(b, checkProcessed)
}

// BenchmarkGRPCBaseline is BenchmarkNonStreamRequest against echoProcessor:
// what the same four messages cost in gRPC alone, the floor under the
// processor's cost.
func BenchmarkGRPCBaseline(b *testing.B) {
	benchNonStream(b, func(_, _ extprocfilter.Headers) error { return nil }, benchEchoEnv+"=1")
}

const (
	// benchStreams is how many Process streams are in flight at once: Envoy
	// multiplexes every in-flight HTTP request of a worker on its connection.
	benchStreams = 64
	// benchConns is how many HTTP/2 connections carry them: Envoy opens one
	// per worker thread, and a 2-core sidecar runs 2 workers.
	benchConns = 2
)

// benchChatRequest is a chat request as a client sends it to Envoy.
var benchChatRequest = &extprocfiltertest.Request{
	Headers: extprocfilter.Headers{
		{Key: ":authority", Value: "gateway.local"},
		{Key: ":path", Value: "/v1/chat/completions"},
		{Key: ":method", Value: "POST"},
		{Key: ":scheme", Value: "https"},
		{Key: "content-type", Value: "application/json"},
		{Key: "content-length", Value: strconv.Itoa(len(benchReqBody))},
		{Key: "authorization", Value: "Bearer " + clientKey},
		{Key: "user-agent", Value: "OpenAI/Python 1.99.0"},
		{Key: "x-request-id", Value: "5a0c6a5e-1f7e-4c1e-9d8e-000000000000"},
		{Key: "x-forwarded-proto", Value: "https"},
	},
	Body: [][]byte{benchReqBody},
}

// benchUpstream answers every request with chatResponse.
func benchUpstream(*extprocfiltertest.ForwardedRequest) *extprocfiltertest.UpstreamResponse {
	return &extprocfiltertest.UpstreamResponse{
		Status: 200,
		Headers: extprocfilter.Headers{
			{Key: "content-type", Value: "application/json"},
			{Key: "content-length", Value: strconv.Itoa(len(chatResponse))},
			{Key: "date", Value: "Mon, 30 Nov 2026 04:00:00 GMT"},
			{Key: "x-request-id", Value: "abc"},
		},
		Chunks: [][]byte{[]byte(chatResponse)},
	}
}

// benchAttrs are the request_attributes of the production filter config
// (spec §6), sent with the first message.
var benchAttrs = map[string]any{"xds.route_name": "ai-chat"}

// benchDo runs benchChatRequest through c as Envoy would, answered by
// chatResponse, and returns the request headers sent upstream and the response
// headers sent downstream.
func benchDo(ctx context.Context, c *extprocfilter.Client) (up, down extprocfilter.Headers, err error) {
	st := c.Start(ctx, extprocfilter.WithRequestAttributes(benchAttrs))
	defer st.Close()
	resp := benchUpstream(nil)
	return envoyExchange(st, benchChatRequest.Headers, benchReqBody,
		append(extprocfilter.Headers{{Key: ":status", Value: "200"}}, resp.Headers...), resp.Chunks[0])
}

// envoyExchange hands st the request headers and its whole body, the response
// headers, then respBody as the whole response body (nil: none yet, the
// response streams). It returns the request headers sent upstream and the
// response headers sent downstream.
func envoyExchange(st *extprocfilter.Stream, reqH extprocfilter.Headers, reqBody []byte, respH extprocfilter.Headers, respBody []byte) (up, down extprocfilter.Headers, err error) {
	r, err := st.RequestHeaders(reqH, false)
	if err = refused(r, err); err != nil {
		return nil, nil, err
	}
	r, err = st.RequestBody(reqBody, true)
	if err = refused(r, err); err != nil {
		return nil, nil, err
	}
	up = r.Headers
	r, err = st.ResponseHeaders(respH, false)
	if err = refused(r, err); err != nil {
		return nil, nil, err
	}
	if respBody == nil {
		return up, r.Headers, nil
	}
	r, err = st.ResponseBody(respBody, true)
	if err = refused(r, err); err != nil {
		return nil, nil, err
	}
	return up, r.Headers, nil
}

// refused turns a call's error, or a result that is not a plain continue,
// into an error.
func refused(r *extprocfilter.Result, err error) error {
	switch {
	case err != nil:
		return err
	case r.LocalReply != nil:
		return errors.Join(fmt.Errorf("local reply %d: %s", r.LocalReply.Status, r.LocalReply.Body), r.Failure)
	case r.Failure != nil || r.Reset:
		return errors.Join(errors.New("refused"), r.Failure)
	}
	return nil
}

// checkProcessed fails unless the processor really routed, admitted and
// settled the request: the benchmark must measure the whole path.
func checkProcessed(up, down extprocfilter.Headers) error {
	switch {
	case up.Value(RouteHeader) != "openai-gpt4o":
		return errors.New("request not routed")
	case down.Value(hdrCost) == "":
		return errors.New("request not settled")
	}
	return nil
}

func benchNonStream(b *testing.B, check func(up, down extprocfilter.Headers) error, env ...string) {
	for _, network := range []string{"tcp", "unix"} {
		for _, streams := range []int{1, benchStreams} {
			b.Run(fmt.Sprintf("%s/streams=%d", network, streams), func(b *testing.B) {
				s := startBenchServer(b, network, env...)
				clients := s.envoyClients(b, min(streams, benchConns))
				ctx := context.Background()
				for _, c := range clients { // warm up: connect, first stream
					up, down, err := benchDo(ctx, c)
					require.NoError(b, err)
					require.NoError(b, check(up, down))
				}
				var next atomic.Int64
				s.measure(b, streams, func(w int) error {
					c := clients[w%len(clients)]
					for next.Add(1) <= int64(b.N) {
						up, down, err := benchDo(ctx, c)
						if err == nil {
							err = check(up, down)
						}
						if err != nil {
							return err
						}
					}
					return nil
				})
			})
		}
	}
}

// BenchmarkStreamChunk: one SSE chunk (one event) per op, through benchStreams
// open streamed chat responses (STREAMED after the processor's mode_override)
// sending at once, driven like Envoy (extprocfilter).
func BenchmarkStreamChunk(b *testing.B) {
	benchStreamChunk(b)
}

// BenchmarkStreamChunkBaseline is BenchmarkStreamChunk against echoProcessor:
// what a streamed chunk costs in gRPC alone.
func BenchmarkStreamChunkBaseline(b *testing.B) {
	benchStreamChunk(b, benchEchoEnv+"=1")
}

func benchStreamChunk(b *testing.B, env ...string) {
	for _, network := range []string{"tcp", "unix"} {
		b.Run(fmt.Sprintf("%s/streams=%d", network, benchStreams), func(b *testing.B) {
			s := startBenchServer(b, network, env...)
			clients := s.envoyClients(b, benchConns)
			ctx := context.Background()
			sts := make([]*extprocfilter.Stream, benchStreams)
			for i := range sts {
				st, err := openEnvoyStream(ctx, clients[i%len(clients)])
				require.NoError(b, err)
				sts[i] = st
				defer st.Close()
			}
			chunk := benchChunk.GetResponseBody().GetBody()
			var next atomic.Int64
			s.measure(b, benchStreams, func(w int) error {
				for next.Add(1) <= int64(b.N) {
					if err := refused(sts[w].ResponseBody(chunk, false)); err != nil {
						return err
					}
				}
				return nil
			})
			for _, st := range sts { // end the responses: settle
				_, err := st.ResponseBody(nil, true)
				require.NoError(b, err)
			}
		})
	}
}

// openEnvoyStream runs a streamed chat request up to its streamed response
// body.
func openEnvoyStream(ctx context.Context, c *extprocfilter.Client) (*extprocfilter.Stream, error) {
	body := []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"count to a million"}]}`)
	h := slices.Clone(benchChatRequest.Headers)
	h[5].Value = strconv.Itoa(len(body))
	st := c.Start(ctx, extprocfilter.WithRequestAttributes(benchAttrs))
	if _, _, err := envoyExchange(st, h, body,
		extprocfilter.Headers{{Key: ":status", Value: "200"}, {Key: "content-type", Value: "text/event-stream"}}, nil); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// measure runs work on workers goroutines (each given its index) as the timed
// part of b, and reports the server's and this process's CPU per op.
func (s *benchServer) measure(b *testing.B, workers int, work func(w int) error) {
	b.Helper()
	srv0, cli0 := s.stats(b), selfCPU(b)
	b.ResetTimer()
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { errs <- work(w) })
	}
	wg.Wait()
	b.StopTimer()
	srv, cli := s.stats(b), selfCPU(b)-cli0
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
	n := float64(b.N)
	b.ReportMetric(float64((srv.cpu-srv0.cpu).Nanoseconds())/1e3/n, "server-µs/op")
	b.ReportMetric(float64(srv.allocs-srv0.allocs)/n, "server-allocs/op")
	b.ReportMetric(float64(srv.bytes-srv0.bytes)/n, "server-B/op")
	b.ReportMetric(float64(cli.Nanoseconds())/1e3/n, "client-µs/op")
}

// openStream starts a streamed chat request and leaves it in STREAMED mode.
func openStream(ctx context.Context, cli extprocv3.ExternalProcessorClient) (extprocv3.ExternalProcessor_ProcessClient, error) {
	st, err := cli.Process(ctx)
	if err != nil {
		return nil, err
	}
	body := []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"count to a million"}]}`)
	for _, m := range []*extprocv3.ProcessingRequest{
		reqHeadersMsg(len(body), true),
		{Request: &extprocv3.ProcessingRequest_RequestBody{RequestBody: &extprocv3.HttpBody{Body: body, EndOfStream: true}}},
		benchSSEHdrs,
	} {
		if err := roundTrip(st, m); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// BenchmarkConcurrentStreams: 1,000 open SSE streams sending chunks. "burst"
// has every stream send its next chunk as soon as the last was answered (1,000
// messages always in flight); "paced" sends one chunk per stream every 50 ms
// (20,000 chunks/s, a busy gateway streaming tokens) or every 200 ms (5,000/s). Reported: the server's
// per-message processing time (receipt to reply, measured inside the
// processor) and the client-observed round trip, as percentiles.
func BenchmarkConcurrentStreams(b *testing.B) {
	const streams = 1000
	for _, network := range []string{"tcp", "unix"} {
		for _, pace := range []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond} {
			name := "burst"
			if pace > 0 {
				name = "paced-" + pace.String()
			}
			b.Run(fmt.Sprintf("%s/streams=%d/%s", network, streams, name), func(b *testing.B) {
				benchConcurrent(b, network, streams, pace)
			})
		}
	}
}

func benchConcurrent(b *testing.B, network string, streams int, pace time.Duration) {
	latFile := filepath.Join(b.TempDir(), "lat")
	s := startBenchServer(b, network, benchLatEnv+"="+latFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sts := make([]extprocv3.ExternalProcessor_ProcessClient, streams)
	for i := range sts {
		st, err := openStream(ctx, s.cli)
		require.NoError(b, err)
		sts[i] = st
	}
	per := max(b.N/streams, 1)
	lat := make([][]time.Duration, streams)
	start := s.stats(b).cpu
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i := range sts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := make([]time.Duration, 0, per)
			next := time.Now()
			if pace > 0 { // spread the streams over one period
				next = next.Add(pace * time.Duration(i) / time.Duration(streams))
			}
			for range per {
				if pace > 0 {
					time.Sleep(time.Until(next))
					next = next.Add(pace)
				}
				t0 := time.Now()
				if err := roundTrip(sts[i], benchChunk); err != nil {
					errs <- err
					return
				}
				l = append(l, time.Since(t0))
			}
			lat[i] = l
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	require.NoError(b, <-errs)
	cpu := s.stats(b).cpu - start
	all := slices.Concat(lat...)
	slices.Sort(all)
	pct := func(p float64) float64 { return float64(all[int(p*float64(len(all)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), "rtt-p50-µs")
	b.ReportMetric(pct(0.99), "rtt-p99-µs")
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(all)), "server-µs/chunk")
	// Stop the child to get its histogram of per-message processing times.
	cancel()
	for _, st := range sts {
		_ = st.CloseSend()
	}
	_ = s.cc.Close()
	_ = s.stdin.Close()
	_ = s.cmd.Wait()
	raw, err := os.ReadFile(latFile)
	require.NoError(b, err)
	p := percentiles(raw, 0.50, 0.99, 0.999)
	b.ReportMetric(p[0], "proc-p50-µs")
	b.ReportMetric(p[1], "proc-p99-µs")
	b.ReportMetric(p[2], "proc-p999-µs")
}
