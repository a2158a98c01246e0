package extproc

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

func without(h extprocfilter.Headers, key string) extprocfilter.Headers {
	var out extprocfilter.Headers
	for _, e := range h {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}

func TestRateLimited(t *testing.T) {
	e := newTestEnv(t)
	e.acct.decide = func(*kernel.AdmitRequest) *kernel.Decision {
		return &kernel.Decision{
			Reason: kernel.ReasonRequestLimit, Scope: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"},
			RetryAfter: 1500 * time.Millisecond,
			RateLimit: kernel.RateLimitInfo{
				LimitRequests: 60, RemainingRequests: 0, ResetRequests: 1500 * time.Millisecond,
				LimitTokens: 10000, RemainingTokens: 420, ResetTokens: 6 * time.Minute,
			},
		}
	}
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), nil)
	requireOpenAIError(t, resp, wantError{429, "requests", "rate_limit_exceeded", "", "Rate limit reached for the key"})
	for k, v := range map[string]string{
		"retry-after":                    "2",
		"retry-after-ms":                 "1500",
		"x-ratelimit-limit-requests":     "60",
		"x-ratelimit-remaining-requests": "0",
		"x-ratelimit-reset-requests":     "1.5s",
		"x-ratelimit-limit-tokens":       "10000",
		"x-ratelimit-remaining-tokens":   "420",
		"x-ratelimit-reset-tokens":       "6m0s",
	} {
		require.Equal(t, v, resp.Headers.Value(k), k)
	}
}

func TestBudgetExceededWithKernel(t *testing.T) {
	// A strict key budget of half a cent, reject on shortfall: the kernel
	// refuses once the reservations cannot fit.
	e := newTestEnv(t)
	p := e.cat.keys[clientKey]
	p.Scopes[0].Limits = &kernel.Limits{
		Budgets:   []kernel.BudgetWindow{{Limit: kernel.Cent / 2, Period: kernel.Period{Kind: kernel.PeriodTotal}}},
		Shortfall: kernel.Reject,
	}
	body := `{"model":"gpt-4o","max_tokens":100,"messages":[]}`
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	var last *extprocfiltertest.Response
	for i := 0; i < 50; i++ {
		last = e.do(t, post("/v1/chat/completions", clientKey, body), up.upstream)
		if last.LocalReply != nil {
			break
		}
		require.Equal(t, 200, last.Status)
	}
	requireOpenAIError(t, last, wantError{400, "budget_exceeded", "budget_exceeded", "", "Budget exceeded for the key"})
	require.NotEmpty(t, up.got, "the first requests fit the budget")
	var spent kernel.Money
	for _, r := range e.acct.Records() {
		spent += kernel.Cost(testPrice, r.Usage)
	}
	require.LessOrEqual(t, spent, kernel.Cent/2, "strict budget never overspent")
}

func TestClampMaxTokens(t *testing.T) {
	e := newTestEnv(t)
	p := e.cat.keys[clientKey]
	// Budget affords a few output tokens only: the kernel clamps max_tokens.
	p.Scopes[0].Limits = &kernel.Limits{
		Budgets: []kernel.BudgetWindow{{Limit: 300_000 * kernel.NanoUSD, Period: kernel.Period{Kind: kernel.PeriodTotal}}},
	}
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	resp := e.do(t, post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","max_completion_tokens":5000}`), up.upstream)
	require.Equal(t, 200, resp.Status)
	var sent map[string]any
	require.NoError(t, json.Unmarshal(up.last(t).Body, &sent))
	n, ok := sent["max_completion_tokens"].(float64)
	require.True(t, ok)
	require.Less(t, n, 5000.0)
	require.GreaterOrEqual(t, n, 1.0)
}

func TestStrictBudgetBoundsOutput(t *testing.T) {
	tests := []struct {
		name   string
		limits *kernel.Limits
		want   any // max_completion_tokens sent upstream; nil when absent
	}{
		{name: "no budget", limits: &kernel.Limits{}, want: nil},
		{
			name:   "strict budget",
			limits: &kernel.Limits{Budgets: []kernel.BudgetWindow{{Limit: 100 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodDaily}}}},
			want:   4096.0,
		},
		{
			name: "estimate budget",
			limits: &kernel.Limits{
				Mode:    kernel.Estimate,
				Budgets: []kernel.BudgetWindow{{Limit: 100 * kernel.Dollar, Period: kernel.Period{Kind: kernel.PeriodDaily}}},
			},
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			e.cat.keys[clientKey].Scopes[0].Limits = tt.limits
			up := &recorder{resp: jsonResponse(200, chatResponse)}
			e.do(t, post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","messages":[]}`), up.upstream)
			var sent map[string]any
			require.NoError(t, json.Unmarshal(up.last(t).Body, &sent))
			require.Equal(t, tt.want, sent["max_completion_tokens"])
		})
	}
}

func TestUpstreamErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   wantError
	}{
		{
			name: "provider rate limit", status: 429,
			body: `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want: wantError{429, "requests", "rate_limit_exceeded", "", "Rate limit reached for gpt-4o"},
		},
		{
			name: "provider rejects the gateway key", status: 401,
			body: `{"error":{"message":"Incorrect API key provided: ` + openAIKey + `.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			want: wantError{502, "upstream_auth_error", "upstream_auth_error", "", "The provider of deployment `openai-gpt4o` rejected the gateway's credentials (HTTP 401)"},
		},
		{
			name: "provider 500 html", status: 500, body: `<h1>oops</h1>`,
			want: wantError{500, "server_error", "", "", "<h1>oops</h1>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			r := jsonResponse(tt.status, tt.body)
			resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: r}).upstream)
			// Not a local reply: the upstream's response, rewritten.
			resp.LocalReply = &extprocfilter.LocalReply{}
			requireOpenAIError(t, resp, tt.want)
			require.Equal(t, strconv.Itoa(len(resp.Body)), resp.Headers.Value("content-length"))
			recs := e.acct.Records()
			require.Len(t, recs, 1)
			require.Equal(t, kernel.StatusFailed, recs[0].Status)
			require.Equal(t, tt.status, recs[0].HTTPStatus)
			require.Equal(t, kernel.Usage{}, recs[0].Usage)
			require.Equal(t, translate.FormatUSD(0), resp.Headers.Value(hdrCost))
		})
	}
}

func TestUpstreamErrorOnStreamRequest(t *testing.T) {
	// stream:true but the provider answers a JSON 400: stays BUFFERED, translated.
	e := newTestEnv(t)
	r := jsonResponse(400, `{"error":{"message":"bad messages","type":"invalid_request_error","param":"messages","code":null}}`)
	resp := e.do(t, post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","stream":true}`), (&recorder{resp: r}).upstream)
	resp.LocalReply = &extprocfilter.LocalReply{}
	requireOpenAIError(t, resp, wantError{400, "invalid_request_error", "", "messages", "bad messages"})
	require.Equal(t, kernel.StatusFailed, e.acct.Records()[0].Status)
}

func TestModels(t *testing.T) {
	e := newTestEnv(t)
	up := &recorder{}
	resp := e.do(t, get("/v1/models", otherKey), up.upstream)
	require.NotNil(t, resp.LocalReply)
	require.Equal(t, 200, resp.Status)
	require.Equal(t, "application/json", resp.Headers.Value("content-type"))
	require.JSONEq(t, `{"object":"list","data":[{"id":"gpt-4o","object":"model","created":1700000000,"owned_by":"acme"}]}`, string(resp.Body))
	require.Empty(t, up.got)

	resp = e.do(t, get("/v1/models", clientKey), nil)
	var list struct{ Data []json.RawMessage }
	require.NoError(t, json.Unmarshal(resp.Body, &list))
	require.Len(t, list.Data, len(e.cat.targets))

	resp = e.do(t, get("/v1/models", "tg-bad"), nil)
	requireOpenAIError(t, resp, wantError{401, "invalid_request_error", "invalid_api_key", "", "Invalid API key"})
	require.Empty(t, e.acct.Admits())
}

func TestContentLength(t *testing.T) {
	t.Run("set to the new length", func(t *testing.T) {
		e := newTestEnv(t)
		up := &recorder{resp: jsonResponse(200, chatResponse)}
		e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), up.upstream)
		fwd := up.last(t)
		require.NotEqual(t, len(testPromptBody), len(fwd.Body))
		require.Equal(t, strconv.Itoa(len(fwd.Body)), fwd.Headers.Value("content-length"))
	})
	t.Run("absent stays absent (chunked)", func(t *testing.T) {
		e := newTestEnv(t)
		up := &recorder{resp: jsonResponse(200, chatResponse)}
		req := post("/v1/chat/completions", clientKey, testPromptBody)
		req.Headers = without(req.Headers, "content-length")
		req.Body = [][]byte{[]byte(testPromptBody[:10]), []byte(testPromptBody[10:])}
		e.do(t, req, up.upstream)
		require.False(t, up.last(t).Headers.Has("content-length"))
	})
	t.Run("unchanged body keeps it", func(t *testing.T) {
		e := newTestEnv(t)
		e.cat.targets["gpt-4o"].ProviderModel = "gpt-4o"
		up := &recorder{resp: jsonResponse(200, chatResponse)}
		e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), up.upstream)
		require.Equal(t, testPromptBody, string(up.last(t).Body))
		require.Equal(t, strconv.Itoa(len(testPromptBody)), up.last(t).Headers.Value("content-length"))
	})
}

func TestCustomerScope(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		hdr   string
		scope bool
	}{
		{name: "user field", body: `{"model":"gpt-4o","user":"cust-1"}`, scope: true},
		{name: "header wins", body: `{"model":"gpt-4o","user":"someone-else"}`, hdr: "cust-1", scope: true},
		{name: "unknown customer", body: `{"model":"gpt-4o","user":"stranger"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEnv(t)
			// Spare capacity would let a careless append write into the
			// principal's shared slice.
			p := e.cat.keys[clientKey]
			p.Scopes = append(make([]kernel.Scope, 0, 8), p.Scopes...)
			before := len(p.Scopes)
			var extra []extprocfilter.Header
			if tt.hdr != "" {
				extra = append(extra, extprocfilter.Header{Key: hdrCustomer, Value: tt.hdr})
			}
			up := &recorder{resp: jsonResponse(200, chatResponse)}
			e.do(t, post("/v1/chat/completions", clientKey, tt.body, extra...), up.upstream)
			require.False(t, up.last(t).Headers.Has(hdrCustomer), "internal header not sent upstream")
			admits := e.acct.Admits()
			require.Len(t, admits, 1)
			last := admits[0].Scopes[len(admits[0].Scopes)-1]
			if tt.scope {
				require.Len(t, admits[0].Scopes, before+1)
				require.Equal(t, kernel.ScopeRef{Kind: kernel.ScopeCustomer, ID: "cust-1"}, last.Ref)
				require.Equal(t, "cust-1", e.acct.Records()[0].CustomerID)
			} else {
				require.Len(t, admits[0].Scopes, before)
			}
			require.Len(t, p.Scopes, before)
			require.Equal(t, kernel.Scope{}, p.Scopes[:before+1][before], "principal's backing array untouched")
		})
	}
}

func TestUnixSocket(t *testing.T) {
	e := &testEnv{cat: newCatalog(), acct: newStateAccountant(t)}
	e.proc = New(e.cat, e.acct)
	lis, err := net.Listen("unix", filepath.Join(t.TempDir(), "extproc.sock"))
	require.NoError(t, err)
	e.client = extprocfilter.NewClient(dialProcessor(t, e.proc, lis), extprocfilter.DefaultConfig())
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: jsonResponse(200, chatResponse)}).upstream)
	require.Equal(t, 200, resp.Status)
	require.Len(t, e.acct.Records(), 1)
}

func TestInProcessDirect(t *testing.T) {
	// The built-in data plane calls the processor in-process.
	e := &testEnv{cat: newCatalog(), acct: newStateAccountant(t)}
	e.proc = New(e.cat, e.acct, WithRequestIDs(func() string { return "fixed-id" }))
	e.client = extprocfilter.NewClient(extprocfilter.GRPC(extprocfiltertest.Direct(e.proc)), extprocfilter.DefaultConfig())
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: jsonResponse(200, chatResponse)}).upstream)
	require.Equal(t, "fixed-id", resp.Headers.Value(hdrRequestID))
	require.Equal(t, "fixed-id", e.acct.Records()[0].RequestID)
}

func TestServeGracefulStop(t *testing.T) {
	p := New(newCatalog(), newStateAccountant(t), WithShutdownTimeout(time.Second))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, lis) }()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestResponseWithoutUsage(t *testing.T) {
	e := newTestEnv(t)
	body := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"sixteen bytes.."}}]}`
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: jsonResponse(200, body)}).upstream)
	require.Equal(t, 200, resp.Status)
	require.Equal(t, body, string(resp.Body))
	recs := e.acct.Records()
	require.Len(t, recs, 1)
	require.Equal(t, kernel.StatusCompleted, recs[0].Status)
	require.Equal(t, kernel.Usage{Input: translate.EstimateTokens(int64(len("Say hello"))), Output: 4}, recs[0].Usage)
	require.NotEqual(t, translate.FormatUSD(0), resp.Headers.Value(hdrCost))
}

func TestRateLimitHeadersOnSuccess(t *testing.T) {
	e := newTestEnv(t)
	e.cat.keys[clientKey].Scopes[0].Limits = &kernel.Limits{RPM: 100, TPM: 100000}
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: jsonResponse(200, chatResponse)}).upstream)
	require.Equal(t, 200, resp.Status)
	require.Equal(t, "100", resp.Headers.Value("x-ratelimit-limit-requests"))
	require.Equal(t, "99", resp.Headers.Value("x-ratelimit-remaining-requests"))
	require.Equal(t, "100000", resp.Headers.Value("x-ratelimit-limit-tokens"))
	require.NotEmpty(t, resp.Headers.Value("x-ratelimit-reset-tokens"))
}

// TestConcurrentRequests runs streamed and non-streamed requests in parallel
// through one processor (run with -race): each is settled once, with its own
// usage, and ids never collide.
func TestConcurrentRequests(t *testing.T) {
	e := newTestEnv(t)
	const n = 64
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var resp *extprocfiltertest.Response
			var err error
			if i%2 == 0 {
				resp, err = extprocfiltertest.Do(ctx, e.client, post("/v1/chat/completions", clientKey, testPromptBody),
					(&recorder{resp: jsonResponse(200, chatResponse)}).upstream)
			} else {
				resp, err = extprocfiltertest.Do(ctx, e.client, post("/v1/chat/completions", clientKey, `{"model":"azure-gpt","stream":true}`),
					(&recorder{resp: sseResponse(streamBody(true), 10+i)}).upstream)
			}
			if !assert.NoError(t, err) || !assert.Equal(t, 200, resp.Status) {
				return
			}
			ids[i] = resp.Headers.Value(hdrRequestID)
		}()
	}
	wg.Wait()
	recs := e.acct.Records()
	require.Len(t, recs, n)
	seen := map[string]bool{}
	for _, r := range recs {
		require.False(t, seen[r.RequestID])
		seen[r.RequestID] = true
		if r.Stream {
			require.Equal(t, int64(10), r.Usage.Input)
		} else {
			require.Equal(t, chatUsage, r.Usage)
		}
	}
	for _, id := range ids {
		require.True(t, seen[id], id)
	}
}

func TestResolveUnavailable(t *testing.T) {
	e := newTestEnv(t)
	cat := &failingResolve{fakeCatalog: e.cat}
	p := New(cat, e.acct)
	client := extprocfilter.NewClient(extprocfilter.GRPC(extprocfiltertest.Direct(p)), extprocfilter.DefaultConfig())
	resp, err := extprocfiltertest.Do(context.Background(), client, post("/v1/chat/completions", clientKey, testPromptBody), nil)
	require.NoError(t, err)
	requireOpenAIError(t, resp, wantError{503, "server_error", "service_unavailable", "", "No deployment of the model `gpt-4o`"})
}

type failingResolve struct{ *fakeCatalog }

func (f *failingResolve) Resolve(context.Context, *Principal, string) (*translate.Target, error) {
	return nil, errors.New("all deployments cooling down")
}

func TestClockAndSettleTimeout(t *testing.T) {
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := start
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
	e := newTestEnv(t, WithClock(clock), WithSettleTimeout(time.Second))
	e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), (&recorder{resp: jsonResponse(200, chatResponse)}).upstream)
	r := e.acct.Records()[0]
	require.Equal(t, start.Add(time.Second), r.StartedAt)
	require.Equal(t, start.Add(2*time.Second), r.EndedAt)
}

// TestLargeBodyOverGRPC: a BUFFERED body travels as one gRPC message; bodies
// above grpc-go's 4 MiB default must still reach the processor (spec R5.5).
func TestLargeBodyOverGRPC(t *testing.T) {
	e := &testEnv{cat: newCatalog(), acct: newStateAccountant(t)}
	e.proc = New(e.cat, e.acct, WithMaxBodyBytes(8<<20))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg := extprocfilter.DefaultConfig()
	cfg.RequestBufferLimit = 16 << 20
	e.client = extprocfilter.NewClient(dialProcessor(t, e.proc, lis), cfg)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("a", 6<<20) + `"}]}`
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	resp := e.do(t, post("/v1/chat/completions", clientKey, body), up.upstream)
	require.Equal(t, 200, resp.Status)
	require.Len(t, up.last(t).Body, len(body)+len(`-2024-08-06`))
	require.Equal(t, int64(len(body)), e.acct.Admits()[0].PromptBytes)
}

// TestHeaderValueOrRaw: the request's headers read the same from raw_value
// and from value (an Envoy that sends only value), with and without a query.
func TestHeaderValueOrRaw(t *testing.T) {
	p := New(newCatalog(), benchAccountant{})
	ctx := context.Background()
	for _, tc := range []struct {
		path, method, length string
		wantPath             string
		want404, want413     bool
	}{
		{path: "/v1/chat/completions", method: "POST", length: "10", wantPath: "/v1/chat/completions"},
		{path: "/v1/chat/completions?x=1", method: "POST", length: "10", wantPath: "/v1/chat/completions?x=1"},
		{path: "/v1/chat/completions", method: "GET", length: "10", want404: true},
		{path: "/v1/nowhere", method: "POST", length: "10", want404: true},
		{path: "/v1/chat/completions", method: "POST", length: "999999999999", want413: true},
		{path: "/v1/chat/completions", method: "POST", length: "x", wantPath: "/v1/chat/completions"},
	} {
		for _, raw := range []bool{true, false} {
			t.Run(tc.path+" "+tc.method+" "+tc.length+" raw="+strconv.FormatBool(raw), func(t *testing.T) {
				kv := []string{":path", tc.path, ":method", tc.method, "content-length", tc.length, "authorization", "Bearer " + clientKey}
				hm := &corev3.HeaderMap{}
				for i := 0; i < len(kv); i += 2 {
					hv := &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])}
					if !raw {
						hv = &corev3.HeaderValue{Key: kv[i], Value: kv[i+1]}
					}
					hm.Headers = append(hm.Headers, hv)
				}
				s := &stream{p: p}
				r := s.requestHeaders(ctx, &extprocv3.HttpHeaders{Headers: hm})
				ir := r.GetImmediateResponse()
				switch {
				case tc.want404:
					require.Equal(t, 404, int(ir.GetStatus().GetCode()))
					require.Contains(t, string(ir.GetBody()), "Invalid URL ("+tc.method+" ")
				case tc.want413:
					require.Equal(t, 413, int(ir.GetStatus().GetCode()))
				default:
					require.Nil(t, ir)
					require.Equal(t, tc.wantPath, s.path)
					require.Equal(t, tc.method, s.method)
					require.True(t, s.hadCL)
				}
			})
		}
	}
}
