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
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/kernel"
)

// The benchmarks run the processor in a child process (this test binary,
// re-executed with TOLLGATE_BENCH_SERVE set) so the server's CPU time can be
// read from /proc apart from the client's. Run them with, e.g.:
//
//	go test ./extproc/ -run '^$' -bench . -benchtime 20000x
//
// Metrics: server-µs/op is the server process's user+system CPU per request
// (or per streamed chunk); rtt-p50/p99-µs are client-observed round trips of
// one ext_proc message.

const (
	benchServeEnv = "TOLLGATE_BENCH_SERVE" // "tcp" or "unix:<path>"
	benchEchoEnv  = "TOLLGATE_BENCH_ECHO"  // serve echoProcessor instead
	benchLatEnv   = "TOLLGATE_BENCH_LAT"   // write the per-message histogram here
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
// type: the cost of the gRPC transport alone.
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
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // the parent closes our stdin to stop us
		_, _ = io.Copy(io.Discard, os.Stdin)
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
	cmd   *exec.Cmd
	stdin io.WriteCloser
	cc    *grpc.ClientConn
	cli   extprocv3.ExternalProcessorClient
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
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(b, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	target := addr
	if network == "unix" {
		target = "unix://" + addr
	}
	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(connWindow))
	require.NoError(b, err)
	s := &benchServer{cmd: cmd, stdin: stdin, cc: cc, cli: extprocv3.NewExternalProcessorClient(cc)}
	b.Cleanup(func() {
		_ = cc.Close()
		_ = stdin.Close()
		_ = cmd.Wait()
	})
	return s
}

// cpu returns the child's user+system CPU time so far.
func (s *benchServer) cpu(b *testing.B) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the command name: state is field 3; utime 14, stime 15.
	fields := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck
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

// oneRequest runs the four phases of a non-streamed request on a new stream.
func oneRequest(ctx context.Context, cli extprocv3.ExternalProcessorClient) error {
	st, err := cli.Process(ctx)
	if err != nil {
		return err
	}
	for _, m := range []*extprocv3.ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
		if err := roundTrip(st, m); err != nil {
			return err
		}
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	if _, err := st.Recv(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("stream end: %w", err)
	}
	return nil
}

// BenchmarkNonStreamRequest: one whole non-streamed chat request (request
// headers, body, response headers, body; admit and settle) per op, over real
// gRPC, sequential and with parallel clients.
func BenchmarkNonStreamRequest(b *testing.B) {
	benchNonStream(b)
}

// BenchmarkGRPCBaseline is BenchmarkNonStreamRequest against echoProcessor:
// what the same four messages cost in gRPC alone.
func BenchmarkGRPCBaseline(b *testing.B) {
	benchNonStream(b, benchEchoEnv+"=1")
}

func benchNonStream(b *testing.B, env ...string) {
	for _, network := range []string{"tcp", "unix"} {
		for _, par := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/clients=%d", network, par), func(b *testing.B) {
				s := startBenchServer(b, network, env...)
				ctx := context.Background()
				require.NoError(b, oneRequest(ctx, s.cli)) // warm up
				start := s.cpu(b)
				b.ResetTimer()
				var wg sync.WaitGroup
				var mu sync.Mutex
				var firstErr error
				per := (b.N + par - 1) / par
				for w := 0; w < par; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < per; i++ {
							if err := oneRequest(ctx, s.cli); err != nil {
								mu.Lock()
								firstErr = cmpErr(firstErr, err)
								mu.Unlock()
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				require.NoError(b, firstErr)
				b.ReportMetric(float64((s.cpu(b)-start).Microseconds())/float64(per*par), "server-µs/op")
			})
		}
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
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

// BenchmarkStreamChunk: one SSE chunk (one event) through an open stream per op.
func BenchmarkStreamChunk(b *testing.B) {
	for _, network := range []string{"tcp", "unix"} {
		b.Run(network, func(b *testing.B) {
			s := startBenchServer(b, network)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			st, err := openStream(ctx, s.cli)
			require.NoError(b, err)
			start := s.cpu(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := roundTrip(st, benchChunk); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((s.cpu(b)-start).Microseconds())/float64(b.N), "server-µs/op")
		})
	}
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
	start := s.cpu(b)
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
	cpu := s.cpu(b) - start
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
