package admin

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// modelCacheOf is a model group's cache configuration from the API (nil: none).
func modelCacheOf(in *adminv1.ModelCache) (*store.ModelCache, error) {
	if in == nil {
		return nil, nil
	}
	c := &store.ModelCache{
		Mode: in.GetMode(), Scope: in.GetScope(), Match: in.GetMatch(),
		Threshold: in.GetThreshold(), EmbeddingModel: in.GetEmbeddingModel(), CountHits: in.GetCountHits(),
	}
	if in.GetHitPrice() != nil {
		p, err := moneyIn("model.cache.hit_price", in.GetHitPrice())
		if err != nil {
			return nil, err
		}
		c.HitPrice = p
	}
	if in.GetTtl() != nil {
		if err := in.GetTtl().CheckValid(); err != nil {
			return nil, errorf(ErrInvalid, "model.cache.ttl: %v", err)
		}
		c.TTL = in.GetTtl().AsDuration()
	}
	if err := c.Validate(); err != nil {
		return nil, errorf(ErrInvalid, "model.%v", err)
	}
	return c, nil
}

// modelCacheView is the API form of a group's cache configuration.
func modelCacheView(c *store.ModelCache) *adminv1.ModelCache {
	if c == nil {
		return nil
	}
	out := &adminv1.ModelCache{
		Mode: c.Mode, Scope: c.Scope, Match: c.Match,
		Threshold: c.Threshold, EmbeddingModel: c.EmbeddingModel, CountHits: c.CountHits,
	}
	if c.HitPrice > 0 {
		out.HitPrice = moneyOut(c.HitPrice)
	}
	if c.TTL > 0 {
		out.Ttl = durationpb.New(c.TTL)
	}
	return out
}

// checkCacheModel fails when a semantic cache's embedding model group does
// not exist.
func (s *Server) checkCacheModel(ctx context.Context, c *store.ModelCache) error {
	if c == nil || c.EmbeddingModel == "" {
		return nil
	}
	if _, _, err := get[store.ModelGroup](ctx, s.st, c.EmbeddingModel); err != nil {
		return errorf(ErrInvalid, "model.cache.embedding_model: %q is not a model group", c.EmbeddingModel)
	}
	return nil
}

// ModelCacheDoc is a model group's cache as written in apply -f YAML:
//
//	cache: {mode: exact, ttl: 1h, scope: team, match: deterministic,
//	        threshold: 0.95, embedding_model: text-embedding-3-small}
type ModelCacheDoc struct {
	Mode           string  `yaml:"mode"`
	TTL            string  `yaml:"ttl"` // a duration, e.g. 1h
	Scope          string  `yaml:"scope"`
	Match          string  `yaml:"match"`
	Threshold      float64 `yaml:"threshold"`
	EmbeddingModel string  `yaml:"embedding_model"`
	HitPrice       string  `yaml:"hit_price"` // dollars per hit, e.g. "0.0001"
	CountHits      bool    `yaml:"count_hits"`
}

// cache is the store form of the document; f names the model in errors.
func (d *ModelCacheDoc) cache(f string) (*store.ModelCache, error) {
	if d == nil {
		return nil, nil
	}
	c := &store.ModelCache{Mode: d.Mode, Scope: d.Scope, Match: d.Match, Threshold: d.Threshold, EmbeddingModel: d.EmbeddingModel, CountHits: d.CountHits}
	p, err := docDollars(f+".cache.hit_price", d.HitPrice)
	if err != nil {
		return nil, err
	}
	c.HitPrice = p
	if d.TTL != "" {
		ttl, err := time.ParseDuration(d.TTL)
		if err != nil {
			return nil, errorf(ErrInvalid, "%s.cache.ttl: %q is not a duration (e.g. 1h)", f, d.TTL)
		}
		c.TTL = ttl
	}
	if err := c.Validate(); err != nil {
		return nil, errorf(ErrInvalid, "%s.%v", f, err)
	}
	return c, nil
}
