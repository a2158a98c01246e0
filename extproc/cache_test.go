package extproc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/cache"
	"github.com/tollgate-ai/tollgate/kernel"
)

// fakeCache answers from a fixed result and records what it was given.
type fakeCache struct {
	res    CacheResult
	err    error
	query  CacheQuery
	stored *fakeStore
}

func (f *fakeCache) Lookup(_ context.Context, q *CacheQuery) (CacheResult, error) {
	f.query = *q
	f.query.Body = append([]byte(nil), q.Body...)
	r := f.res
	if r.Store != nil {
		f.stored = &fakeStore{}
		r.Store = f.stored
	}
	return r, f.err
}

type fakeStore struct {
	chunks []byte
	body   []byte
	done   bool
	cost   kernel.Money
}

func (s *fakeStore) Write(b []byte) { s.chunks = append(s.chunks, b...) }

func (s *fakeStore) Done(_ context.Context, body []byte, _ kernel.Usage, cost kernel.Money) {
	s.done, s.body, s.cost = true, append([]byte(nil), body...), cost
}

// recAccountant records admissions and settlements.
type recAccountant struct {
	admits []kernel.AdmitRequest
	recs   []Record
}

func (a *recAccountant) Admit(_ context.Context, req *kernel.AdmitRequest) (kernel.Decision, error) {
	r := *req
	a.admits = append(a.admits, r)
	return kernel.Decision{Admitted: true, MaxTokens: max(req.MaxTokens, req.DefaultMaxTokens)}, nil
}

func (a *recAccountant) Settle(_ context.Context, rec *Record) (kernel.Money, error) {
	a.recs = append(a.recs, *rec)
	return kernel.Cost(testPrice, rec.Usage), nil
}

func (a *recAccountant) RecordRefused(context.Context, *Record) error { return nil }

func withHeader(m *extprocv3.ProcessingRequest, k, v string) *extprocv3.ProcessingRequest {
	h := m.GetRequestHeaders()
	c := hdrs()
	c.Headers = append(c.Headers, h.GetHeaders().GetHeaders()...)
	c.Headers = append(c.Headers, hdrs(k, v).Headers...)
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &extprocv3.HttpHeaders{Headers: c}}}
}

// A hit is answered at once: the stored body with its content type,
// x-tollgate-cache and age, admitted with no price, tokens or budgets and
// settled at $0 without a deployment; nothing goes upstream.
func TestCacheHitAnsweredAtOnce(t *testing.T) {
	ctx := context.Background()
	fc := &fakeCache{res: CacheResult{Status: "hit", Hit: &CacheHit{
		Body: []byte("data: {}\n\ndata: [DONE]\n\n"), ContentType: "text/event-stream", Age: "42", Saved: 1234,
	}}}
	acct := &recAccountant{}
	cat := newCatalog()
	budget := kernel.Limits{RPM: 10, TPM: 100, Budgets: []kernel.BudgetWindow{{Limit: kernel.Dollar}}}
	cat.keys[clientKey].Scopes[0].Limits = &budget
	p := New(cat, acct, WithResponseCache(fc))
	s := &stream{p: p}
	require.Nil(t, s.handle(ctx, withHeader(withHeader(benchReqHdrs, "cache-control", "no-store"), "x-tollgate-cache-ttl", "5m")).GetImmediateResponse())
	r := s.handle(ctx, benchReqBodyM)
	ir := r.GetImmediateResponse()
	require.NotNil(t, ir)
	require.EqualValues(t, 200, ir.GetStatus().GetCode())
	require.Equal(t, "data: {}\n\ndata: [DONE]\n\n", string(ir.GetBody()))
	got := map[string]string{}
	for _, h := range ir.GetHeaders().GetSetHeaders() {
		got[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
	}
	require.Equal(t, "text/event-stream", got["content-type"])
	require.Equal(t, "hit", got["x-tollgate-cache"])
	require.Equal(t, "42", got["age"])
	require.Equal(t, "0.000000000", got["x-tollgate-cost"])

	require.Equal(t, CacheQuery{
		API: APIChat, Model: "gpt-4o", Body: benchReqBody, Principal: cat.keys[clientKey],
		CacheControl: "no-store", TTL: "5m",
	}, fc.query)
	require.Len(t, acct.admits, 1)
	a := acct.admits[0]
	require.Equal(t, kernel.Price{}, a.Price)
	require.Zero(t, a.PromptBytes)
	require.Equal(t, int64(10), a.Scopes[0].Limits.RPM, "rpm counts")
	require.Zero(t, a.Scopes[0].Limits.TPM, "tpm does not")
	require.Empty(t, a.Scopes[0].Limits.Budgets, "budgets do not")
	require.Len(t, budget.Budgets, 1, "the key's own limits are untouched")
	require.Len(t, acct.recs, 1)
	rec := acct.recs[0]
	require.Empty(t, rec.Deployment)
	require.Zero(t, rec.Usage.Total())
	require.Equal(t, CacheRecord{Hit: true, Saved: 1234, Status: "hit"}, rec.Cache)
	s.finish(ctx)
	require.Len(t, acct.recs, 1, "settled once")
}

// A hit's ledger row carries the request's tags, as a miss's does: the
// scopes it was admitted under are the ones its row is charged to.
func TestCacheHitCarriesTags(t *testing.T) {
	ctx := context.Background()
	fc := &fakeCache{res: CacheResult{Status: "hit", Hit: &CacheHit{Body: []byte("{}"), ContentType: "application/json"}}}
	acct := &recAccountant{}
	cat := newCatalog()
	cat.keys[clientKey].Tags = []string{"env=dev"}
	s := &stream{p: New(cat, acct, WithResponseCache(fc))}
	require.Nil(t, s.handle(ctx, withHeader(benchReqHdrs, hdrTags, "feature=search")).GetImmediateResponse())
	require.NotNil(t, s.handle(ctx, benchReqBodyM).GetImmediateResponse())
	require.Len(t, acct.recs, 1)
	require.Equal(t, []string{"env=dev", "feature=search"}, acct.recs[0].Tags)
}

// A miss goes upstream, says so in x-tollgate-cache, and its completed
// reply is stored with the cost it was settled at; an upstream error is not
// stored; a streamed reply is fed as it passes.
func TestCacheMissStoresTheReply(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, status string, body string) (*fakeCache, *recAccountant, *extprocv3.ProcessingResponse) {
		fc := &fakeCache{res: CacheResult{Status: "miss", Store: &fakeStore{}}}
		acct := &recAccountant{}
		p := New(newCatalog(), acct, WithResponseCache(fc))
		s := &stream{p: p}
		s.handle(ctx, benchReqHdrs)
		require.Nil(t, s.handle(ctx, benchReqBodyM).GetImmediateResponse())
		rh := s.handle(ctx, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
			ResponseHeaders: &extprocv3.HttpHeaders{Headers: hdrs(":status", status, "content-type", "application/json")},
		}})
		s.handle(ctx, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{
			ResponseBody: &extprocv3.HttpBody{Body: []byte(body), EndOfStream: true},
		}})
		s.finish(ctx)
		return fc, acct, rh
	}
	fc, acct, rh := run(t, "200", chatResponse)
	var status string
	for _, h := range rh.GetResponseHeaders().GetResponse().GetHeaderMutation().GetSetHeaders() {
		if h.GetHeader().GetKey() == "x-tollgate-cache" {
			status = string(h.GetHeader().GetRawValue())
		}
	}
	require.Equal(t, "miss", status)
	require.True(t, fc.stored.done)
	require.Contains(t, string(fc.stored.body), `"choices"`)
	require.Len(t, acct.recs, 1)
	require.Equal(t, "miss", acct.recs[0].Cache.Status)
	require.Equal(t, kernel.Cost(testPrice, acct.recs[0].Usage), fc.stored.cost)
	require.Positive(t, fc.stored.cost)

	fc, _, _ = run(t, "500", `{"error":{"message":"boom"}}`)
	require.False(t, fc.stored.done, "an upstream error is not stored")
}

func TestCacheStreamFed(t *testing.T) {
	ctx := context.Background()
	fc := &fakeCache{res: CacheResult{Status: "miss", Store: &fakeStore{}}}
	p := New(newCatalog(), &recAccountant{}, WithResponseCache(fc))
	s := &stream{p: p}
	body := []byte(`{"model":"gpt-4o","stream":true,"temperature":0}`)
	s.handle(ctx, reqHeadersMsg(len(body), true))
	require.Nil(t, s.handle(ctx, bodyMsg(body)).GetImmediateResponse())
	s.handle(ctx, benchSSEHdrs)
	chunk := "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\n"
	s.handle(ctx, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte(chunk)}}})
	s.handle(ctx, &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseBody{ResponseBody: &extprocv3.HttpBody{Body: []byte("data: [DONE]\n\n"), EndOfStream: true}}})
	require.True(t, fc.query.Stream)
	require.True(t, fc.stored.done)
	require.Nil(t, fc.stored.body, "a stream's reply is what was written")
	require.Contains(t, string(fc.stored.chunks), `"content":"hi"`)
	require.Contains(t, string(fc.stored.chunks), "[DONE]")
}

// A cache header the cache refuses is a 400 in the client's format; a
// failing cache lets the request through.
func TestCacheErrors(t *testing.T) {
	ctx := context.Background()
	fc := &fakeCache{err: fmt.Errorf("%w: the x-tollgate-cache-ttl header is bad", ErrCacheRequest)}
	s := &stream{p: New(newCatalog(), &recAccountant{}, WithResponseCache(fc))}
	s.handle(ctx, benchReqHdrs)
	ir := s.handle(ctx, benchReqBodyM).GetImmediateResponse()
	require.NotNil(t, ir)
	require.EqualValues(t, 400, ir.GetStatus().GetCode())
	require.Contains(t, string(ir.GetBody()), `"param":"x-tollgate-cache-ttl"`)

	fc = &fakeCache{err: errors.New("redis down")}
	s = &stream{p: New(newCatalog(), &recAccountant{}, WithResponseCache(fc))}
	s.handle(ctx, benchReqHdrs)
	require.Nil(t, s.handle(ctx, benchReqBodyM).GetImmediateResponse())
}

// benchCache adapts cache.Cache as the gateway does, for one policy.
type benchCache struct {
	c   *cache.Cache
	pol cache.Policy
}

func (b *benchCache) Lookup(ctx context.Context, q *CacheQuery) (CacheResult, error) {
	req := cache.Request{API: cache.API(q.API), Model: q.Model, Body: q.Body, Stream: q.Stream, CacheControl: q.CacheControl, TTL: q.TTL}
	req.Tenant = cache.Tenant{Org: q.Principal.OrgID, Team: q.Principal.TeamID, Key: q.Principal.KeyID}
	plan, err := cache.NewPlan(&req, &b.pol)
	if err != nil || plan.Skipped() {
		return CacheResult{Status: "skip"}, nil //nolint:nilerr // as the gateway
	}
	h, err := b.c.Lookup(ctx, &plan, nil)
	if h != nil {
		return CacheResult{Status: h.Header(), Hit: &CacheHit{Body: h.Body, ContentType: h.ContentType, Age: h.AgeSeconds(), Saved: h.Entry.Cost}}, err
	}
	return CacheResult{Status: "miss", Store: &benchStore{b: b, plan: plan}}, err
}

type benchStore struct {
	b    *benchCache
	plan cache.Plan
}

func (s *benchStore) Write([]byte) {}

func (s *benchStore) Done(ctx context.Context, body []byte, u kernel.Usage, cost kernel.Money) {
	_ = s.b.c.Store(ctx, &s.plan, &cache.Entry{Body: body, Usage: u, Cost: cost}, nil)
}

// discard is a backend that stores nothing: every lookup misses.
type discard struct{}

func (discard) Get(context.Context, cache.Key) ([]byte, error)              { return nil, nil }
func (discard) Set(context.Context, cache.Key, []byte, time.Duration) error { return nil }

// BenchmarkHandleCacheMiss is BenchmarkHandleNonStream for a group with an
// exact cache whose every lookup misses: the lookup (key) and the store
// (entry encoded) added to the request's four phases.
func BenchmarkHandleCacheMiss(b *testing.B) {
	bc := &benchCache{c: cache.New(discard{}), pol: cache.Policy{Mode: cache.ModeExact, Match: cache.MatchAll}}
	benchHandleNonStream(b, New(newCatalog(), benchAccountant{}, WithResponseCache(bc)))
}

// BenchmarkHandleCacheHit is one request answered from the in-process cache:
// request headers and body, the reply rendered as stored.
func BenchmarkHandleCacheHit(b *testing.B) {
	ctx := context.Background()
	bc := &benchCache{c: cache.New(cache.NewMemory(0, 0, nil)), pol: cache.Policy{Mode: cache.ModeExact, Match: cache.MatchAll}}
	p := New(newCatalog(), benchAccountant{}, WithResponseCache(bc))
	fill := &stream{p: p}
	for _, m := range []*extprocv3ProcessingRequest{benchReqHdrs, benchReqBodyM, benchRespHdrs, benchRespBody} {
		fill.handle(ctx, m)
	}
	fill.finish(ctx)
	b.ReportAllocs()
	start := selfCPU(b)
	for b.Loop() {
		s := &stream{p: p}
		s.handle(ctx, benchReqHdrs)
		r := s.handle(ctx, benchReqBodyM)
		if !strings.Contains(string(r.GetImmediateResponse().GetBody()), "choices") {
			b.Fatalf("not a hit: %v", r)
		}
		s.finish(ctx)
	}
	b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
}

// offCache is the gateway's cache for a group without one: no result.
type offCache struct{}

func (offCache) Lookup(context.Context, *CacheQuery) (CacheResult, error) { return CacheResult{}, nil }

// BenchmarkHandleCacheOff is BenchmarkHandleNonStream with a response cache
// that has no policy for the group (every group without a cache).
func BenchmarkHandleCacheOff(b *testing.B) {
	benchHandleNonStream(b, New(newCatalog(), benchAccountant{}, WithResponseCache(offCache{})))
}
