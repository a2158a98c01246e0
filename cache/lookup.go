package cache

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// Cache looks requests up and stores their replies in a Backend, and, for
// semantic plans, in an Index of prompt embeddings.
type Cache struct {
	b   Backend
	idx Index
	now func() time.Time
}

// Option configures a Cache.
type Option func(*Cache)

// WithIndex enables the semantic cache over idx (plans of semantic model
// groups; the embedding comes from the Embedder given to Lookup).
func WithIndex(idx Index) Option { return func(c *Cache) { c.idx = idx } }

// WithClock sets the clock entries are dated by (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *Cache) { c.now = now } }

// New returns a cache over b.
func New(b Backend, opts ...Option) *Cache {
	c := &Cache{b: b, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Hit is a cached reply rendered for the request that found it.
type Hit struct {
	Entry       *Entry
	Body        []byte
	ContentType string
	Age         time.Duration
	// Semantic: found by the prompt's embedding, Score its cosine similarity.
	Semantic bool
	Score    float64
}

// Header is the x-tollgate-cache value of a hit: "hit", or
// "hit; semantic; score=0.973".
func (h *Hit) Header() string {
	if !h.Semantic {
		return "hit"
	}
	return "hit; semantic; score=" + strconv.FormatFloat(h.Score, 'f', 3, 64)
}

// AgeSeconds is the Age header's value (RFC 9111 §5.1: whole seconds).
func (h *Hit) AgeSeconds() string { return strconv.FormatInt(int64(h.Age/time.Second), 10) }

// Lookup finds the plan's request: exactly by key, then — for a semantic
// plan with an Index and emb not nil — by the nearest prompt of its
// namespace at or above the threshold. nil, nil is a miss. An entry that
// cannot be rendered as the request wants it is a miss too.
func (c *Cache) Lookup(ctx context.Context, p *Plan, emb Embedder) (*Hit, error) {
	if !p.Lookup {
		p.resolveSemantic() // the store may embed the prompt (a plan made to store only)
		return nil, nil
	}
	h, err := c.get(ctx, p, p.Key)
	if h != nil || err != nil {
		p.sem = semSource{} // the body is not kept
		return h, err
	}
	p.resolveSemantic()
	if !p.Semantic || c.idx == nil || emb == nil {
		return nil, nil
	}
	vec, err := emb.Embed(ctx, p.Embedding, p.Prompt)
	if err != nil {
		return nil, errors.Join(ErrEmbed, err)
	}
	p.vec = vec
	ks, score, ok, err := c.idx.Nearest(ctx, p.Namespace, vec, p.Threshold)
	if err != nil || !ok {
		return nil, err
	}
	key, ok := ParseKey(ks)
	if !ok {
		return nil, nil // not a key of this version: a miss
	}
	h, err = c.get(ctx, p, key)
	if h != nil {
		h.Semantic, h.Score = true, score
	}
	return h, err
}

func (c *Cache) get(ctx context.Context, p *Plan, key Key) (*Hit, error) {
	b, err := c.b.Get(ctx, key)
	if err != nil || b == nil {
		return nil, err
	}
	e, err := decodeEntry(b, p.api)
	if err != nil {
		return nil, nil //nolint:nilerr // an unreadable entry is a miss, overwritten by the next store
	}
	body, ct, err := render(e, p)
	if err != nil {
		return nil, nil //nolint:nilerr // not renderable this way: a miss
	}
	return &Hit{Entry: e, Body: body, ContentType: ct, Age: max(c.now().Sub(e.Created), 0)}, nil
}

// Store stores the reply of a plan that stores (a completed 2xx reply): e's
// API and Created are set here. For a semantic plan whose lookup embedded the
// prompt, the embedding is indexed too; a plan that looked nothing up (no-cache)
// is embedded now when emb is not nil.
func (c *Cache) Store(ctx context.Context, p *Plan, e *Entry, emb Embedder) error {
	if !p.Store {
		return nil
	}
	if p.sem.pending { // stored without a lookup: nothing semantic to add
		p.Semantic, p.sem = false, semSource{}
	}
	e.API, e.Created = p.api, c.now()
	b, err := e.encode()
	if err != nil {
		return err
	}
	if err := c.b.Set(ctx, p.Key, b, p.TTL); err != nil {
		return err
	}
	if !p.Semantic || c.idx == nil {
		return nil
	}
	if p.vec == nil {
		if emb == nil {
			return nil
		}
		if p.vec, err = emb.Embed(ctx, p.Embedding, p.Prompt); err != nil {
			return errors.Join(ErrEmbed, err)
		}
	}
	return c.idx.Add(ctx, p.Namespace, p.vec, p.Key.String(), e.Created.Add(p.TTL))
}
