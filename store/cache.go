package store

import (
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// ModelCache is a model group's response cache (docs/caching.md); nil or a
// Mode of "" or "off" caches nothing.
type ModelCache struct {
	// Mode: "exact" or "semantic" (exact first, then the nearest prompt).
	Mode string `json:"mode,omitempty"`
	// TTL of an entry (0: one hour); a request's x-tollgate-cache-ttl
	// overrides it.
	TTL time.Duration `json:"ttl,omitempty"`
	// Scope an entry is shared in: "key" (default), "team" or "org" — never
	// across organizations.
	Scope string `json:"scope,omitempty"`
	// Match: "deterministic" (default: temperature 0, embeddings) or "all".
	Match string `json:"match,omitempty"`
	// Threshold: least cosine similarity of a semantic hit (0: 0.95).
	Threshold float64 `json:"threshold,omitempty"`
	// EmbeddingModel: the model group that embeds prompts (semantic).
	EmbeddingModel string `json:"embedding_model,omitempty"`
	// HitPrice is what a hit is charged (0: nothing): one unit at this
	// price in the hit's ledger row.
	HitPrice kernel.Money `json:"hit_price,omitempty"`
	// CountHits: a hit counts for the key's tpm (the stored reply's
	// tokens) and is admitted under its budgets, not only its rpm and
	// parallel limits; with a HitPrice, the budgets are charged the price
	// and tpm counts the stored reply's tokens.
	CountHits bool `json:"count_hits,omitempty"`
}

// Validate checks the values; id names the group in errors.
func (c *ModelCache) Validate() error {
	if c == nil {
		return nil
	}
	switch c.Mode {
	case "", "off", "exact", "semantic":
	default:
		return fmt.Errorf("cache.mode: %q is not off, exact or semantic", c.Mode)
	}
	switch c.Scope {
	case "", "key", "team", "org":
	default:
		return fmt.Errorf("cache.scope: %q is not key, team or org", c.Scope)
	}
	switch c.Match {
	case "", "deterministic", "all":
	default:
		return fmt.Errorf("cache.match: %q is not deterministic or all", c.Match)
	}
	if c.TTL < 0 || c.TTL > 30*24*time.Hour {
		return fmt.Errorf("cache.ttl: %v is not within 0 and 720h", c.TTL)
	}
	if c.Threshold < 0 || c.Threshold > 1 {
		return fmt.Errorf("cache.threshold: %v is not within 0 and 1", c.Threshold)
	}
	if c.HitPrice < 0 {
		return fmt.Errorf("cache.hit_price: %v is negative", c.HitPrice)
	}
	if c.Mode == "semantic" && c.EmbeddingModel == "" {
		return fmt.Errorf("cache.embedding_model: a semantic cache needs an embedding model group")
	}
	return nil
}
