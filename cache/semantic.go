package cache

import (
	"context"
	"errors"
	"math"
	"time"
)

// ErrEmbed wraps an Embedder's failure (the lookup is then a miss).
var ErrEmbed = errors.New("cache: embedding the prompt failed")

// Embedder embeds a prompt with an embedding model group. The gateway
// provides it per request, so that the embedding goes through its own
// routing and is charged to the request's key like any embeddings request.
type Embedder interface {
	Embed(ctx context.Context, model, text string) ([]float32, error)
}

// EmbedderFunc adapts a function to Embedder.
type EmbedderFunc func(ctx context.Context, model, text string) ([]float32, error)

// Embed calls f.
func (f EmbedderFunc) Embed(ctx context.Context, model, text string) ([]float32, error) {
	return f(ctx, model, text)
}

// Index finds the cached prompt nearest to an embedding within a namespace
// (scope, API, model group and every request field but the prompt: only
// prompts whose answer could be the same are compared).
type Index interface {
	// Nearest returns the key of the most similar live entry of ns and its
	// cosine similarity, ok=false when none reaches threshold.
	Nearest(ctx context.Context, ns string, vec []float32, threshold float64) (key string, score float64, ok bool, err error)
	// Add indexes vec under ns for the entry key until expires.
	Add(ctx context.Context, ns string, vec []float32, key string, expires time.Time) error
}

// cosine is the cosine similarity of a and b (0 when their lengths differ or
// one is zero).
func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}
