// Command mockllm runs the deterministic mock LLM provider of package
// internal/mockllm (OpenAI, Azure OpenAI and Anthropic formats) for tests,
// demos and benchmarks.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "mockllm:", err)
		os.Exit(1)
	}
}

// run parses args into a mockllm.Config and serves until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	return mockllm.Run(ctx, cfg, stdout)
}

func parseFlags(args []string, stderr io.Writer) (mockllm.Config, error) {
	cfg := mockllm.DefaultConfig()
	fs := flag.NewFlagSet("mockllm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "listen", cfg.Addr, "listen address")
	fs.DurationVar(&cfg.Latency, "latency", cfg.Latency, "delay before the first response byte")
	fs.DurationVar(&cfg.ChunkDelay, "chunk-delay", cfg.ChunkDelay, "delay before each streamed content chunk but the first")
	fs.IntVar(&cfg.Chunks, "chunks", cfg.Chunks, "content chunks per stream (0: one per word)")
	fs.IntVar(&cfg.OutputTokens, "output-tokens", cfg.OutputTokens, "default output tokens (words) per reply")
	fs.IntVar(&cfg.EmbeddingDimensions, "embedding-dimensions", cfg.EmbeddingDimensions, "embedding length when the request gives none")
	fs.StringVar(&cfg.AdminKey, "admin-key", cfg.AdminKey, "admin key of the usage and cost reports (empty: refuse them)")
	fs.DurationVar(&cfg.BatchDelay, "batch-delay", cfg.BatchDelay, "how long a batch takes to run (a request's x-mock-batch-delay overrides it)")
	flagged := fs.String("flagged-words", strings.Join(cfg.FlaggedWords, ","), "comma-separated words POST /v1/moderations flags")
	models := fs.String("models", strings.Join(cfg.Models, ","), "comma-separated model ids listed by GET /v1/models")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	cfg.Models = strings.Split(*models, ",")
	cfg.FlaggedWords = strings.FieldsFunc(*flagged, func(r rune) bool { return r == ',' })
	return cfg, cfg.Validate()
}
