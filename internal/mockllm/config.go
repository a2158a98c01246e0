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
		FlaggedWords:        []string{"flagme"},
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
