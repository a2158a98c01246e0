package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tollgate-ai/tollgate/cache"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// groupCache is a model group's cache policy in the snapshot.
type groupCache struct {
	group  string // the group's id: aliases share its entries
	policy cache.Policy
	// hitPrice, countHits: what a hit is charged and whether it counts
	// for tpm and budgets (store.ModelCache).
	hitPrice  kernel.Money
	countHits bool
}

// groupCacheOf reads a group's stored cache settings (nil: no cache).
func groupCacheOf(id string, c *store.ModelCache, log *slog.Logger) *groupCache {
	if c == nil {
		return nil
	}
	mode, err := cache.ParseMode(c.Mode)
	if err == nil && mode == cache.ModeOff {
		return nil
	}
	level, err2 := cache.ParseLevel(c.Scope)
	if err = errors.Join(err, err2); err != nil {
		log.Warn("model group's cache skipped", "model", id, "err", err)
		return nil
	}
	pol := cache.Policy{Mode: mode, TTL: c.TTL, Level: level, Threshold: c.Threshold, EmbeddingModel: c.EmbeddingModel}
	if c.Match == "all" {
		pol.Match = cache.MatchAll
	}
	return &groupCache{group: id, policy: pol, hitPrice: c.HitPrice, countHits: c.CountHits}
}

// cachePolicy is the cache of the group a client's model name resolves to.
func (c *Catalog) cachePolicy(model string) *groupCache {
	s := c.Snapshot()
	if s == nil {
		return nil
	}
	if m, ok := s.lookup(model); ok { // a group, an alias or a pattern's match
		return m.cache
	}
	return nil
}

// responseCache is the processor's ResponseCache over cache.Cache, with the
// policies of the current snapshot.
type responseCache struct {
	c   *cache.Cache
	cat *Catalog
	emb *groupEmbedder // the semantic cache's embedder (cache_embed.go; nil: exact only)
	log *slog.Logger
	// storeTimeout bounds a store (the reply waits for it).
	storeTimeout time.Duration
	// local: the backend is this process's memory (a store never blocks).
	local bool
}

var _ extproc.ResponseCache = (*responseCache)(nil)

func newResponseCache(c *cache.Cache, cat *Catalog, log *slog.Logger) *responseCache {
	return &responseCache{c: c, cat: cat, log: log, storeTimeout: 2 * time.Second}
}

// embedIdleConns bounds the idle connections the semantic cache's embedder
// keeps to a provider.
const embedIdleConns = 256

// embedThrough makes semantic groups embed prompts through acct (the
// processor's accountant) on behalf of each request's key.
func (r *responseCache) embedThrough(acct extproc.Accountant, now func() time.Time) {
	// Every request of a semantic group embeds its prompt, as many at once as
	// requests in flight: keep that many connections to the provider idle
	// (the default transport keeps 2 a host, and a semantic group under load
	// dialed a connection for nearly every embedding: bench/README.md).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 0, embedIdleConns
	r.emb = &groupEmbedder{cat: r.cat, acct: acct, client: &http.Client{Timeout: 30 * time.Second, Transport: tr}, now: now}
}

// Lookup plans the request under its group's policy and looks it up.
func (r *responseCache) Lookup(ctx context.Context, q *extproc.CacheQuery) (extproc.CacheResult, error) {
	gc := r.cat.cachePolicy(q.Model)
	if gc == nil {
		return extproc.CacheResult{}, nil
	}
	req := cache.Request{
		API: cache.API(q.API), Model: gc.group, Body: q.Body, Stream: q.Stream, JSONArray: q.JSONArray,
		CacheControl: q.CacheControl, TTL: q.TTL, Vary: q.Vary,
	}
	if p := q.Principal; p != nil {
		req.Tenant = cache.Tenant{Org: p.OrgID, Team: p.TeamID, Key: p.KeyID}
	}
	plan, err := cache.NewPlan(&req, &gc.policy)
	if errors.Is(err, cache.ErrBadTTL) {
		return extproc.CacheResult{}, fmt.Errorf("%w: the x-tollgate-cache-ttl header must be a duration such as 90s or 1h, at most 720h", extproc.ErrCacheRequest)
	}
	if err != nil || plan.Skipped() {
		return extproc.CacheResult{Status: "skip"}, nil //nolint:nilerr // a body the cache cannot read is not cached
	}
	res := extproc.CacheResult{Status: "miss"}
	if !plan.Lookup {
		res.Status = "skip"
	}
	if q.NoLookup {
		// A try: the router-level stream looked up and missed (a hit
		// makes no try); this stream only stores.
		plan.Lookup = false
	}
	var emb cache.Embedder // only a semantic plan embeds (a closure per request otherwise)
	if plan.Semantic {
		emb = r.emb.forKey(q.Principal)
	}
	h, err := r.c.Lookup(ctx, &plan, emb)
	if err != nil {
		r.log.Warn("cache lookup failed", "model", gc.group, "err", err)
	}
	if h != nil {
		res.Status = h.Header()
		res.Hit = &extproc.CacheHit{
			Body: h.Body, ContentType: h.ContentType, Age: h.AgeSeconds(), Saved: h.Entry.Cost, Semantic: h.Semantic,
			Price: gc.hitPrice, CountHits: gc.countHits, Usage: h.Entry.Usage,
		}
		return res, nil
	}
	if plan.Store {
		st := storePool.Get().(*cacheStore)
		*st = cacheStore{r: r, plan: plan, col: cache.NewCollector(&plan), emb: emb}
		res.Store = st
	}
	return res, nil
}

// cacheStore stores one miss's reply. Pooled: Done gives it back (a store
// whose reply failed, never done, is left to the collector).
type cacheStore struct {
	r    *responseCache
	plan cache.Plan
	col  *cache.Collector // a stream's (nil: a plain reply)
	emb  cache.Embedder
}

var storePool = sync.Pool{New: func() any { return new(cacheStore) }}

func (s *cacheStore) Write(chunk []byte) {
	if s.col != nil {
		s.col.Write(chunk)
	}
}

// Done stores the reply, within storeTimeout, whatever ctx's state: the
// client has its reply.
func (s *cacheStore) Done(ctx context.Context, body []byte, u kernel.Usage, cost kernel.Money) {
	defer func() {
		*s = cacheStore{}
		storePool.Put(s)
	}()
	if s.col != nil {
		b, err := s.col.Body(u)
		if err != nil {
			return // a stream that cannot be stored (cut, failed, too large)
		}
		body = b
	} // a plain reply's body is copied by Store's encoding before Done returns
	e := cache.Entry{Body: body, Usage: u, Cost: cost}
	if err := s.r.store(ctx, &s.plan, &e, s.emb); err != nil && !errors.Is(err, cache.ErrTooLarge) {
		s.r.log.Warn("cache store failed", "err", err)
	}
}

// store stores e for p within storeTimeout, whatever ctx's state (the
// client has its reply). A store to this process's memory neither blocks
// nor reads ctx: it takes no timer (a context with a deadline is two
// allocations and a timer per miss).
func (r *responseCache) store(ctx context.Context, p *cache.Plan, e *cache.Entry, emb cache.Embedder) error {
	if r.local && emb == nil {
		return r.c.Store(ctx, p, e, nil)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.storeTimeout)
	defer cancel()
	return r.c.Store(ctx, p, e, emb)
}

// newGatewayCache is the gateway's response cache over b and idx (nil: in
// this process, with the default caps).
func newGatewayCache(b cache.Backend, idx cache.Index, cat *Catalog, now func() time.Time, log *slog.Logger) *responseCache {
	if b == nil {
		b = cache.NewMemory(0, 0, now)
	}
	if idx == nil {
		idx = cache.NewMemoryIndex(0, now)
	}
	r := newResponseCache(cache.New(b, cache.WithIndex(idx), cache.WithClock(now)), cat, log)
	_, r.local = b.(*cache.Memory)
	return r
}
