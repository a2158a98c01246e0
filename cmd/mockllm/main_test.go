package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags([]string{
		"-listen", "127.0.0.1:0", "-latency", "1s", "-chunk-delay", "5ms", "-chunks", "4",
		"-output-tokens", "32", "-models", "a,b", "-embedding-dimensions", "3",
	}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:0", cfg.Addr)
	require.Equal(t, time.Second, cfg.Latency)
	require.Equal(t, 5*time.Millisecond, cfg.ChunkDelay)
	require.Equal(t, 4, cfg.Chunks)
	require.Equal(t, 32, cfg.OutputTokens)
	require.Equal(t, []string{"a", "b"}, cfg.Models)
	require.Equal(t, 3, cfg.EmbeddingDimensions)

	_, err = parseFlags([]string{"-chunks", "-1"}, io.Discard)
	require.Error(t, err)
	_, err = parseFlags([]string{"extra"}, io.Discard)
	require.Error(t, err)
	_, err = parseFlags([]string{"-h"}, io.Discard)
	require.ErrorIs(t, err, flag.ErrHelp)
}

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-listen", "127.0.0.1:0"}, pw, io.Discard) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	addr := strings.TrimSpace(strings.TrimPrefix(line, "mockllm listening on "))
	tr := &http.Transport{}
	c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/v1/models")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, string(body), `"mock-gpt"`)
	tr.CloseIdleConnections()
	cancel()
	require.NoError(t, <-done)
}
