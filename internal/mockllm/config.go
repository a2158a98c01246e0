package mockllm

import (
	"errors"
	"fmt"
	"time"
)

// Config configures a mock provider.
type Config struct {
	// Addr is the listen address of Run, e.g. "127.0.0.1:9090".
	Addr string
	// Latency is the delay before the first response byte.
	Latency time.Duration
	// ChunkDelay is the delay before each streamed content chunk but the first.
	ChunkDelay time.Duration
	// Chunks is the number of content chunks of a stream; 0 means one per word.
	Chunks int
	// OutputTokens is the default number of output tokens (words) of a reply.
	OutputTokens int
	// Models are the ids GET /v1/models lists.
	Models []string
	// EmbeddingDimensions is the embedding length when the request gives no
	// "dimensions".
	EmbeddingDimensions int
	// AdminKey is the admin key of the usage and cost reports (reports.go);
	// empty refuses every report request.
	AdminKey string
	// Prices are what the mock bills each model (reports.go).
	Prices map[string]Price
	// BatchDelay is how long a batch takes to run (batches.go); a request's
	// x-mock-batch-delay overrides it.
	BatchDelay time.Duration
	// FlaggedWords are what POST /v1/moderations flags (moderation.go):
	// an input containing one (ASCII case-insensitive) is flagged.
	FlaggedWords []string
}

// DefaultConfig returns the defaults of the mockllm binary.
func DefaultConfig() Config {
	return Config{
		Addr:                "127.0.0.1:9090",
		OutputTokens:        16,
		Models:              []string{"mock-gpt", "mock-embedding", "mock-claude"},
		EmbeddingDimensions: 8,
		AdminKey:            "sk-admin-mock",
		Prices: map[string]Price{
			"mock-gpt":       {Input: 1_000_000_000, CachedInput: 500_000_000, Output: 2_000_000_000},
			"mock-embedding": {Input: 100_000_000},
			"mock-claude":    {Input: 3_000_000_000, CachedInput: 300_000_000, CacheWrite: 3_750_000_000, Output: 15_000_000_000},
		},
		FlaggedWords: []string{"flagme"},
	}
}

// ErrInvalidConfig is wrapped by every Validate error.
var ErrInvalidConfig = errors.New("mockllm: invalid config")

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Latency < 0 || c.ChunkDelay < 0:
		return fmt.Errorf("%w: negative delay", ErrInvalidConfig)
	case c.Chunks < 0:
		return fmt.Errorf("%w: negative chunk count", ErrInvalidConfig)
	case c.OutputTokens < 0:
		return fmt.Errorf("%w: negative output tokens", ErrInvalidConfig)
	case c.EmbeddingDimensions < 1:
		return fmt.Errorf("%w: embedding dimensions must be at least 1", ErrInvalidConfig)
	}
	return nil
}
