package extproc

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Secrets used by the tests; none may ever appear in a response or a log.
const (
	clientKey      = "tg-client-secret-AAAAAAAAAAAAAAAAAAAA"
	otherKey       = "tg-limited-secret-BBBBBBBBBBBBBBBBBBB"
	openAIKey      = "sk-provider-openai-CCCCCCCCCCCCCCCCCCCC"
	azureKey       = "azure-provider-key-DDDDDDDDDDDDDDDDDDD"
	testPromptBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"Say hello"}]}`
)

var testPrice = kernel.Price{Input: 2_500 * kernel.MicroUSD * 1000, Output: 10 * kernel.Dollar, CachedInput: 1_250 * kernel.MicroUSD * 1000}

// testEnv is a processor served over real gRPC on loopback, with a fake
// catalog, the kernel-backed accountant and an Envoy-faithful client.
type testEnv struct {
	cat    *fakeCatalog
	acct   *stateAccountant
	proc   *Processor
	client *extprocfilter.Client
	logs   *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newCatalog() *fakeCatalog {
	keyScope := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, Limits: &kernel.Limits{}}
	return &fakeCatalog{
		keys: map[string]*Principal{
			clientKey: {KeyID: "k1", UserID: "u1", Scopes: []kernel.Scope{
				keyScope,
				{Ref: kernel.ScopeRef{Kind: kernel.ScopeUser, ID: "u1"}},
				{Ref: kernel.ScopeRef{Kind: kernel.ScopeGlobal}},
			}},
			otherKey: {KeyID: "k2", Scopes: []kernel.Scope{{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k2"}, Limits: &kernel.Limits{}}}},
		},
		allowed: map[string][]string{"k2": {"gpt-4o"}},
		targets: map[string]*translate.Target{
			"gpt-4o": {
				Model: "gpt-4o", Deployment: "openai-gpt4o", Provider: translate.ProviderOpenAI, BasePath: "/v1",
				Host: "api.openai.com", APIKey: openAIKey, ProviderModel: "gpt-4o-2024-08-06", Price: testPrice,
				DefaultMaxTokens: 4096,
			},
			"azure-gpt": {
				Model: "azure-gpt", Deployment: "azure-east", Provider: translate.ProviderAzure, Host: "x.openai.azure.com",
				APIKey: azureKey, APIVersion: "2024-10-21", ProviderModel: "gpt4o-east", Price: testPrice, DefaultMaxTokens: 4096,
			},
			"instruct": {
				Model: "instruct", Deployment: "openai-instruct", Provider: translate.ProviderOpenAI, BasePath: "/v1",
				APIKey: openAIKey, ProviderModel: "gpt-3.5-turbo-instruct", Price: testPrice, DefaultMaxTokens: 256,
			},
			"embed": {
				Model: "embed", Deployment: "openai-embed", Provider: translate.ProviderOpenAI, BasePath: "/v1",
				APIKey: openAIKey, ProviderModel: "text-embedding-3-small", Price: kernel.Price{Input: 20 * kernel.MicroUSD * 1000},
			},
			"azure-embed": {
				Model: "azure-embed", Deployment: "azure-embed", Provider: translate.ProviderAzure, APIKey: azureKey,
				APIVersion: "2024-10-21", ProviderModel: "embed-east", Price: kernel.Price{Input: 20 * kernel.MicroUSD * 1000},
			},
			"claude": {
				Model: "claude", Deployment: "anthropic", Provider: translate.ProviderType("unsupported-test-provider"),
				APIKey: "x", ProviderModel: "claude", Price: testPrice,
			},
		},
		customers: map[string]kernel.Scope{
			"cust-1": {Ref: kernel.ScopeRef{Kind: kernel.ScopeCustomer, ID: "cust-1"}},
		},
	}
}

// inProcess, when set, is how newTestEnv connects its client to the
// processor instead of gRPC over TCP (TestFlowsInProcess sets it).
var inProcess func(p *Processor) extprocfilter.Transport

// newTestEnv serves a processor on 127.0.0.1 over TCP and returns a client
// configured like production Envoy (spec §6).
func newTestEnv(t testing.TB, opts ...Option) *testEnv {
	t.Helper()
	e := &testEnv{cat: newCatalog(), acct: newStateAccountant(t), logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.proc = New(e.cat, e.acct, append([]Option{WithLogger(log)}, opts...)...)
	if inProcess != nil {
		e.client = extprocfilter.NewClient(inProcess(e.proc), extprocfilter.DefaultConfig())
	} else {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		e.client = extprocfilter.NewClient(dialProcessor(t, e.proc, lis), extprocfilter.DefaultConfig())
	}
	t.Cleanup(func() {
		require.NotContains(t, e.logs.String(), clientKey)
		require.NotContains(t, e.logs.String(), openAIKey)
		require.NotContains(t, e.logs.String(), azureKey)
	})
	return e
}

// dialProcessor serves p on lis and returns a client connection to it; both
// stop at the end of the test.
func dialProcessor(t testing.TB, p *Processor, lis net.Listener) extprocfilter.Transport {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, lis) }()
	target := lis.Addr().String()
	if lis.Addr().Network() == "unix" {
		target = "unix://" + target
	}
	cc, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(streamWindow), grpc.WithInitialConnWindowSize(connWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, cc.Close())
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("Serve did not stop")
		}
	})
	return extprocfilter.GRPC(extprocv3.NewExternalProcessorClient(cc))
}

// post builds a POST with the client key and a content-length.
func post(path, key, body string, extra ...extprocfilter.Header) *extprocfiltertest.Request {
	h := extprocfilter.Headers{
		{Key: ":method", Value: "POST"},
		{Key: ":path", Value: path},
		{Key: ":authority", Value: "gateway.local"},
		{Key: ":scheme", Value: "https"},
		{Key: "content-type", Value: "application/json"},
		{Key: "content-length", Value: strconv.Itoa(len(body))},
	}
	if key != "" {
		h = append(h, extprocfilter.Header{Key: "authorization", Value: "Bearer " + key})
	}
	h = append(h, extra...)
	return &extprocfiltertest.Request{Headers: h, Body: [][]byte{[]byte(body)}}
}

func get(path, key string) *extprocfiltertest.Request {
	return &extprocfiltertest.Request{Headers: extprocfilter.Headers{
		{Key: ":method", Value: "GET"},
		{Key: ":path", Value: path},
		{Key: ":authority", Value: "gateway.local"},
		{Key: ":scheme", Value: "https"},
		{Key: "authorization", Value: "Bearer " + key},
	}}
}

// recorder is a fake upstream that records the forwarded request and answers
// with resp.
type recorder struct {
	mu   sync.Mutex
	got  []*extprocfiltertest.ForwardedRequest
	resp *extprocfiltertest.UpstreamResponse
}

func (r *recorder) upstream(req *extprocfiltertest.ForwardedRequest) *extprocfiltertest.UpstreamResponse {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, req)
	return r.resp
}

func (r *recorder) last(t testing.TB) *extprocfiltertest.ForwardedRequest {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	require.NotEmpty(t, r.got, "upstream never called")
	return r.got[len(r.got)-1]
}

func jsonResponse(status int, body string) *extprocfiltertest.UpstreamResponse {
	return &extprocfiltertest.UpstreamResponse{
		Status: status,
		Headers: extprocfilter.Headers{
			{Key: "content-type", Value: "application/json"},
			{Key: "content-length", Value: strconv.Itoa(len(body))},
		},
		Chunks: [][]byte{[]byte(body)},
	}
}

// sseResponse splits body into chunks of size n (any boundary).
func sseResponse(body string, n int) *extprocfiltertest.UpstreamResponse {
	var chunks [][]byte
	for b := []byte(body); len(b) > 0; {
		k := min(n, len(b))
		chunks = append(chunks, b[:k])
		b = b[k:]
	}
	return &extprocfiltertest.UpstreamResponse{
		Status:  200,
		Headers: extprocfilter.Headers{{Key: "content-type", Value: "text/event-stream; charset=utf-8"}},
		Chunks:  chunks,
	}
}

func (e *testEnv) do(t testing.TB, req *extprocfiltertest.Request, up extprocfiltertest.Upstream) *extprocfiltertest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := extprocfiltertest.Do(ctx, e.client, req, up)
	require.NoError(t, err)
	require.Empty(t, resp.Failures, "the Envoy client caught a protocol violation")
	return resp
}
