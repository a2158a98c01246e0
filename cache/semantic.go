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

// unit is v scaled to length 1, in a new slice (nil when v is zero): the
// cosine similarity of two unit vectors is their dot product.
func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return nil
	}
	inv := 1 / math.Sqrt(n)
	u := make([]float32, len(v))
	for i, x := range v {
		u[i] = float32(float64(x) * inv)
	}
	return u
}

// dot is the dot product of a and b (0 when their lengths differ). Four
// sums, so that the adds do not wait on each other.
func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return float64(s0+s1) + float64(s2+s3)
}
