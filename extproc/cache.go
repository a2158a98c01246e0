package extproc

import (
	"context"
	"errors"
	"net/http"

	"github.com/tollgate-ai/tollgate/translate"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/kernel"
)

// The response cache (docs/caching.md): the processor asks a ResponseCache
// once the request is parsed, resolved and its customer known. A hit is
// answered at once — the stored reply, rendered as the stream or the plain
// body the client asked for — and admitted for its key's rpm and parallel
// limits only (no tokens, no budget), settled at $0 with the cost it saved
// (Record.Cache); nothing goes upstream. A miss goes upstream as any request
// and its completed 2xx reply, as the client received it, is stored
// (streamed bytes fed as they pass). With per-try routing the router-level
// stream looks up and the try that serves the request stores.

// Request and reply headers of the cache.
const (
	hdrCacheControl = "cache-control"
	hdrCacheTTL     = "x-tollgate-cache-ttl"
	hdrCacheStatus  = "x-tollgate-cache"
	hdrAge          = "age"
)

// ResponseCache looks requests up and stores their replies; the gateway
// provides it (cache/ behind an adapter).
type ResponseCache interface {
	// Lookup decides what the cache does for q and looks it up. An error
	// wrapping ErrCacheRequest is the client's (400); any other is a
	// cache failure, the request then goes upstream uncached.
	Lookup(ctx context.Context, q *CacheQuery) (CacheResult, error)
}

// ErrCacheRequest marks a Lookup error caused by the request itself (a bad
// x-tollgate-cache-ttl): its message is for the client.
var ErrCacheRequest = errors.New("cache request")

// CacheQuery is what the cache reads of one request.
type CacheQuery struct {
	API       translate.API
	Model     string // as the client named it (a group or an alias)
	Body      []byte // the client's body; not kept past Lookup
	Stream    bool
	JSONArray bool // a Gemini stream without alt=sse
	Principal *Principal
	// CacheControl, TTL: the request's Cache-Control and x-tollgate-cache-ttl.
	CacheControl, TTL string
	// Vary: request headers that change the answer (anthropic-beta).
	Vary string
	// NoLookup: store only (a per-try stream: the router-level one looked up).
	NoLookup bool
}

// CacheResult is the cache's answer to a query.
type CacheResult struct {
	// Status is the x-tollgate-cache value: "hit" (with "; semantic;
	// score=…"), "miss" or "skip"; "" when the model group has no cache.
	Status string
	Hit    *CacheHit
	// Store receives the reply of a miss to store (nil: nothing to store).
	Store CacheStore
}

// CacheHit is a cached reply, ready for the client.
type CacheHit struct {
	Body        []byte
	ContentType string
	Age         string // seconds, the Age header
	Saved       kernel.Money
	Semantic    bool
	// Price is what the hit is charged (0: nothing), as one unit of input.
	Price kernel.Money
	// CountHits: the hit is admitted under the key's token limits and
	// budgets too, and settled with Usage, the stored reply's tokens.
	CountHits bool
	Usage     kernel.Usage
}

// CacheStore stores the reply of one miss.
type CacheStore interface {
	// Write takes the next bytes of a streamed reply, as the client gets them.
	Write(chunk []byte)
	// Done stores the completed reply: body is a plain reply's (nil for a
	// stream), u and cost what it was settled at.
	Done(ctx context.Context, body []byte, u kernel.Usage, cost kernel.Money)
}

// CacheRecord is the cache's part of a settled request (Record.Cache).
type CacheRecord struct {
	Hit      bool
	Semantic bool
	Saved    kernel.Money // what the reply cost when it was stored
	Status   string       // the x-tollgate-cache value ("" when no cache applies)
}

// WithResponseCache answers and stores requests of cached model groups.
func WithResponseCache(c ResponseCache) Option { return func(p *Processor) { p.cache = c } }

// streamCache is a stream's part of caching.
type streamCache struct {
	control, ttl, beta string // request headers
	status             string
	store              CacheStore
	query              CacheQuery // the lookup's query, kept here so that it is not one more allocation
}

// cacheHeader keeps the request headers the cache reads.
func (s *stream) cacheHeader(k, v string) {
	switch k {
	case hdrCacheControl:
		s.cache.control = v
	case hdrCacheTTL:
		s.cache.ttl = v
	case translate.HdrAnthropicBeta:
		s.cache.beta = v
	}
}

// cacheLookup asks the cache about the request (after its customer scope is
// known, before admission): a reply when it is answered here — a hit, or a
// 400 for a bad cache header — else nil and the request goes on.
func (s *stream) cacheLookup(ctx context.Context, body []byte, scopes []kernel.Scope) *extprocv3.ProcessingResponse {
	q := &s.cache.query
	*q = CacheQuery{
		API: s.ep.API, Model: s.in.Model, Body: body, Stream: s.in.Stream,
		JSONArray: s.in.Stream && s.ep.API == translate.APIGeminiGenerate && !translate.GeminiSSE(s.path),
		Principal: s.principal, CacheControl: s.cache.control, TTL: s.cache.ttl,
		Vary: s.cache.beta, NoLookup: s.isTry(),
	}
	r, err := s.p.cache.Lookup(ctx, q)
	q.Body = nil // the stream outlives the request's body: holding it kept a second copy of every body in flight
	if err != nil {
		if errors.Is(err, ErrCacheRequest) {
			return s.reject(translate.ErrInvalidRequest(err.Error(), hdrCacheTTL))
		}
		s.p.log.Warn("cache lookup failed", "request_id", s.id, "err", err)
	}
	s.cache.status, s.cache.store = r.Status, r.Store
	if r.Hit == nil {
		return nil
	}
	areq := &s.areq
	u := hitAdmit(areq, r.Hit, s.id, s.target.Model, scopes)
	s.mark(&s.report.AdmitStart)
	d, err := s.p.acct.Admit(ctx, areq)
	if err != nil {
		s.p.log.Warn("admit failed", "request_id", s.id, "err", err)
		return s.reject(translate.ErrUnavailable())
	}
	if !d.Admitted {
		return s.reject(s.refused(d, s.in.Model))
	}
	s.admitted, s.decision = true, d
	s.rec.Cache = CacheRecord{Hit: true, Semantic: r.Hit.Semantic, Saved: r.Hit.Saved, Status: r.Status}
	cost, settled := s.settleHit(ctx, u)
	var kvs [6]headerKV
	var vals [128]byte
	l := headerList{kv: kvs[:0], vals: vals[:0]}
	l = l.add(hdrCacheStatus, r.Status)
	l = l.add(hdrAge, r.Hit.Age)
	if settled {
		l = l.addUSD(hdrCost, cost)
	}
	l = l.addRateLimits(d.RateLimit)
	pr := s.immediate(http.StatusOK, r.Hit.Body, headerPairs(l))
	if r.Hit.ContentType != "application/json" {
		// immediate's first header is its content type.
		pr.GetImmediateResponse().GetHeaders().GetSetHeaders()[0].GetHeader().RawValue = []byte(r.Hit.ContentType)
	}
	return pr
}

// headerPairs lists l's headers as pairs.
func headerPairs(l headerList) [][2]string {
	out := make([][2]string, len(l.kv))
	for i, kv := range l.kv {
		out[i] = [2]string{kv.key, string(l.vals[kv.start:kv.end])}
	}
	return out
}

// hitAdmit sets areq to a hit's admission and returns the usage it settles
// with. By default a hit counts for the key's rpm and parallel limits, not
// for its tokens or budgets: admitted with no token bound, at the hit's
// price as one unit of input (nothing when it has none). With CountHits it
// is admitted under every limit for the stored reply's tokens, and settled
// with them at no price; with a price too, it is charged the price and
// counted for the stored reply's tokens: the kernel prices tokens, so the
// hit's unit is one input token at the price and the stored reply's other
// tokens are output at no price — tpm sees exactly the stored tokens and the
// cost, the budgets' reservation included, is exactly the price.
func hitAdmit(areq *kernel.AdmitRequest, h *CacheHit, id, model string, scopes []kernel.Scope) kernel.Usage {
	*areq = kernel.AdmitRequest{ID: id, Scopes: hitScopes(scopes), Model: model, DefaultMaxTokens: 1}
	switch {
	case h.CountHits && h.Price > 0:
		rest := max(h.Usage.Total()-1, 0)
		areq.Scopes = scopes
		areq.Price = kernel.PerUnit(h.Price)
		areq.PromptBytes, areq.MaxTokens = 1, rest
		return kernel.Usage{Input: 1, Output: rest}
	case h.CountHits:
		areq.Scopes = scopes
		areq.PromptBytes = h.Usage.Input + h.Usage.CachedInput + h.Usage.CacheWrite
		areq.MaxTokens = max(h.Usage.Output+h.Usage.Reasoning, 1)
		return h.Usage
	case h.Price > 0: // one unit at the price (a price per unit is per million tokens)
		areq.Price = kernel.PerUnit(h.Price)
		areq.PromptBytes = 1
		return kernel.Usage{Input: 1}
	}
	return kernel.Usage{}
}

// hitScopes are the scopes a hit is admitted on: the request's, without
// their token limits and budgets.
func hitScopes(scopes []kernel.Scope) []kernel.Scope {
	out := make([]kernel.Scope, len(scopes))
	for i, sc := range scopes {
		out[i] = sc
		if sc.Limits != nil {
			l := *sc.Limits
			l.TPM, l.Budgets = 0, nil
			out[i].Limits = &l
		}
	}
	return out
}

// settleHit settles a hit once with usage u (hitAdmit's): no deployment,
// the cost its reservation's price gives u ($0 unless priced); charged, like
// any row, to the run and tags it was admitted under.
func (s *stream) settleHit(ctx context.Context, u kernel.Usage) (kernel.Money, bool) {
	s.settled = true
	rec := &s.rec
	c := rec.Cache
	*rec = Record{
		RequestID: s.id, Principal: s.principal, CustomerID: s.customer, RunID: s.runID, Tags: s.tags, Model: s.target.Model,
		Status: kernel.StatusCompleted, HTTPStatus: http.StatusOK, Stream: s.in.Stream, Usage: u,
		StartedAt: s.started, EndedAt: s.p.now(), Cache: c,
	}
	if s.p.obs != nil && s.report.SettleStart.IsZero() {
		s.report.SettleStart = rec.EndedAt
	}
	cost, err := s.p.acct.Settle(ctx, rec)
	s.settledReport(rec, cost, err)
	if err != nil {
		s.p.log.Warn("settle failed", "request_id", s.id, "model", rec.Model, "err", err)
		return 0, false
	}
	return cost, true
}

// cacheChunk feeds a streamed reply's chunk, as sent to the client, to the
// store of a miss.
func (s *stream) cacheChunk(out []byte) {
	if s.cache.store != nil && !s.isRouterTry() {
		s.cache.store.Write(out)
	}
}

// cacheDone stores the completed 2xx reply of a miss (body nil for a
// stream); anything else stores nothing.
func (s *stream) cacheDone(ctx context.Context, body []byte, u kernel.Usage, cost kernel.Money) {
	st := s.cache.store
	s.cache.store = nil
	if st == nil || s.status < 200 || s.status > 299 || s.isRouterTry() {
		return
	}
	st.Done(ctx, body, u, cost)
}

// cacheReplyHeader adds x-tollgate-cache to a reply's headers.
func (s *stream) cacheReplyHeader(l headerList) headerList {
	if s.cache.status == "" {
		return l
	}
	return l.add(hdrCacheStatus, s.cache.status)
}
