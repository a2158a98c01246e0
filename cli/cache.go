package cli

import (
	"flag"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
)

// modelCacheFlags are a model group's response cache (docs/caching.md).
type modelCacheFlags struct {
	mode, scope, match, embedding string
	ttl                           time.Duration
	threshold                     float64
	hitPrice                      string
	countHits                     bool
}

func (f *modelCacheFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.mode, "cache", "", "response cache: exact, semantic or off")
	fs.DurationVar(&f.ttl, "cache-ttl", 0, "time an entry lives (default 1h)")
	fs.StringVar(&f.scope, "cache-scope", "", "who shares an entry: key (default), team or org")
	fs.StringVar(&f.match, "cache-match", "", "requests cached: deterministic (default: temperature 0, embeddings) or all")
	fs.Float64Var(&f.threshold, "cache-threshold", 0, "least similarity of a semantic hit (default 0.95)")
	fs.StringVar(&f.embedding, "cache-embedding-model", "", "model group that embeds prompts for the semantic cache")
	fs.StringVar(&f.hitPrice, "cache-hit-price", "", "dollars charged per cache hit (default 0)")
	fs.BoolVar(&f.countHits, "cache-count-hits", false, "count hits for tpm (their tokens) and budgets, not only rpm and parallel limits")
}

// cacheFlagNames are the flags of modelCacheFlags: any of them given updates
// the "cache" field.
var cacheFlagNames = []string{
	"cache", "cache-ttl", "cache-scope", "cache-match", "cache-threshold", "cache-embedding-model",
	"cache-hit-price", "cache-count-hits",
}

// given reports whether any cache flag was given.
func (f *modelCacheFlags) given(set map[string]bool) bool {
	for _, n := range cacheFlagNames {
		if set[n] {
			return true
		}
	}
	return false
}

// merge sets the given flags over cur (the group's cache so far, nil: none).
func (f *modelCacheFlags) merge(cur *adminv1.ModelCache, set map[string]bool) (*adminv1.ModelCache, error) {
	c := &adminv1.ModelCache{}
	if cur != nil {
		c = cur
	}
	if set["cache"] {
		c.Mode = f.mode
	}
	if set["cache-ttl"] {
		c.Ttl = durationpb.New(f.ttl)
	}
	if set["cache-scope"] {
		c.Scope = f.scope
	}
	if set["cache-match"] {
		c.Match = f.match
	}
	if set["cache-threshold"] {
		c.Threshold = f.threshold
	}
	if set["cache-embedding-model"] {
		c.EmbeddingModel = f.embedding
	}
	if set["cache-hit-price"] {
		c.HitPrice = nil
		if f.hitPrice != "" {
			m, err := adminv1.DollarsMoney(f.hitPrice)
			if err != nil {
				return nil, fmt.Errorf("%w: --cache-hit-price: %w", ErrUsage, err)
			}
			c.HitPrice = m
		}
	}
	if set["cache-count-hits"] {
		c.CountHits = f.countHits
	}
	return c, nil
}

// modelCache is the CACHE line of a model's view.
func modelCache(c *adminv1.ModelCache) string {
	if c == nil || c.GetMode() == "" || c.GetMode() == "off" {
		return "off"
	}
	ttl, scope, match := "1h", c.GetScope(), c.GetMatch()
	if c.GetTtl() != nil {
		ttl = c.GetTtl().AsDuration().String()
	}
	if scope == "" {
		scope = "key"
	}
	if match == "" {
		match = "deterministic"
	}
	s := fmt.Sprintf("%s, ttl %s, scope %s, match %s", c.GetMode(), ttl, scope, match)
	if c.GetMode() == "semantic" {
		th := c.GetThreshold()
		if th == 0 {
			th = 0.95
		}
		s += fmt.Sprintf(", embedding %s, threshold %g", c.GetEmbeddingModel(), th)
	}
	if c.GetHitPrice().GetNanoUsd() > 0 {
		s += ", hit price " + usd(c.GetHitPrice())
	}
	if c.GetCountHits() {
		s += ", hits count for tpm and budgets"
	}
	return s
}
