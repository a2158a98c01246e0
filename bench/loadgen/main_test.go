package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/mockllm"
)

// Every scenario runs against the mock provider without errors and prints
// the JSON line bench/run.sh reads.
func TestRunAgainstTheMock(t *testing.T) {
	srv := httptest.NewServer(mockllm.New(mockllm.DefaultConfig()))
	t.Cleanup(srv.Close)
	for _, scen := range []string{"chat", "stream", "embeddings"} {
		t.Run(scen, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), []string{
				"-url", srv.URL, "-key", "sk-test", "-model", "mock-gpt",
				"-scenario", scen, "-c", "4", "-d", "500ms", "-warmup", "0s",
			}, &out, io.Discard)
			require.NoError(t, err)
			var r map[string]any
			require.NoError(t, json.Unmarshal(out.Bytes(), &r))
			for _, k := range []string{"scenario", "target", "connections", "seconds", "requests", "errors", "rps", "p50_ms", "p99_ms", "max_ms"} {
				require.Contains(t, r, k)
			}
			require.Equal(t, scen, r["scenario"])
			require.InDelta(t, 0, r["errors"], 0, "first error: %v", r["first_error"])
			require.Positive(t, r["requests"], "%s", out.String())
			require.LessOrEqual(t, r["p50_ms"], r["p99_ms"])
		})
	}
}

// The first request of each connection is reported apart from the rest: a
// target slow on a connection's first request shows in first_*, not later_*.
func TestRunSplitsFirstRequests(t *testing.T) {
	mock := mockllm.New(mockllm.DefaultConfig())
	var mu sync.Mutex
	seen := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := !seen[r.RemoteAddr]
		seen[r.RemoteAddr] = true
		mu.Unlock()
		if first {
			time.Sleep(300 * time.Millisecond)
		}
		mock.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{
		"-url", srv.URL, "-key", "sk-test", "-model", "mock-gpt", "-c", "4", "-d", "800ms", "-warmup", "0s",
	}, &out, io.Discard))
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Zero(t, r.Errors, r.FirstError)
	require.GreaterOrEqual(t, r.FirstP50ms, 300.0, "%s", out.String())
	require.Less(t, r.LaterP50ms, 300.0, "%s", out.String())
	require.Greater(t, r.Requests, int64(4), "%s", out.String())
}

// A target that answers errors counts errors, not requests.
func TestRunCountsErrors(t *testing.T) {
	srv := httptest.NewServer(sized(500, "application/json", `{"error":{}}`))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"-url", srv.URL, "-c", "2", "-d", "100ms", "-warmup", "0s"}, &out, io.Discard))
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Zero(t, r.Requests)
	require.Positive(t, r.Errors)
	require.Contains(t, r.FirstError, "status 500")
}

// With -rate the connections together send no more than the rate: never
// ahead of their schedule.
func TestRunPaced(t *testing.T) {
	r := runOnMock(t, "-c", "4", "-d", "1s", "-warmup", "0s", "-rate", "100")
	// At most one request per connection per 40 ms, the first at once.
	require.LessOrEqual(t, float64(r.Requests), 100*r.Seconds+4, "%+v", r)
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-scenario", "nope"}, {"-c", "0"}, {"-url", "https://x"}, {"extra"}, {"-rate", "-1"}} {
		require.Error(t, run(t.Context(), args, io.Discard, io.Discard), "%q", args)
	}
}

func TestWithPrompt(t *testing.T) {
	for _, name := range []string{"chat", "stream", "embeddings"} {
		sc, ok := scenarioFor(name, "m")
		if !ok {
			t.Fatal(name)
		}
		body := withPrompt(sc.body, 4096)
		var v struct {
			Messages []struct{ Content string } `json:"messages"`
			Input    string                     `json:"input"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %v: %s", name, err, body)
		}
		got := v.Input
		if len(v.Messages) > 0 {
			got = v.Messages[0].Content
		}
		if len(got) != 4096 {
			t.Fatalf("%s: prompt of %d bytes, want 4096", name, len(got))
		}
	}
}

// With -unique no two requests carry the same prompt (a cache misses every
// time), over every connection and with -prompt-bytes too; each body is
// still valid JSON of one length.
func TestRunUnique(t *testing.T) {
	for _, tc := range []struct {
		scen  string
		extra []string
	}{{"chat", nil}, {"stream", nil}, {"embeddings", nil}, {"chat", []string{"-prompt-bytes", "300"}}} {
		t.Run(tc.scen+fmt.Sprint(tc.extra), func(t *testing.T) {
			mock := mockllm.New(mockllm.DefaultConfig())
			var mu sync.Mutex
			prompts := map[string]int{}
			lens := map[int64]bool{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				var v struct {
					Messages []struct{ Content string } `json:"messages"`
					Input    string                     `json:"input"`
				}
				if err := json.Unmarshal(b, &v); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				p := v.Input
				if len(v.Messages) > 0 {
					p = v.Messages[0].Content
				}
				mu.Lock()
				prompts[p]++
				lens[r.ContentLength] = true
				mu.Unlock()
				r.Body = io.NopCloser(bytes.NewReader(b))
				mock.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			var out bytes.Buffer
			args := append([]string{
				"-url", srv.URL, "-key", "sk-test", "-model", "mock-gpt", "-scenario", tc.scen,
				"-c", "3", "-d", "300ms", "-warmup", "0s", "-unique",
			}, tc.extra...)
			require.NoError(t, run(t.Context(), args, &out, io.Discard))
			var r result
			require.NoError(t, json.Unmarshal(out.Bytes(), &r))
			require.Zero(t, r.Errors, r.FirstError)
			require.Greater(t, r.Requests, int64(3))
			mu.Lock()
			defer mu.Unlock()
			for p, n := range prompts {
				require.Equal(t, 1, n, "prompt %q sent %d times", p, n)
				require.Regexp(t, ` #[0-9a-f]{16}$`, p)
			}
			require.Len(t, lens, 1, "every body has one length")
		})
	}
}

func TestWithUniqueNeedsAPrompt(t *testing.T) {
	_, _, err := withUnique([]byte(`{"model":"m"}`))
	require.Error(t, err)
}

// chat-parts sends chat's prompt as content parts: the same text in another
// body, which the mock answers.
func TestChatParts(t *testing.T) {
	chat, _ := scenarioFor("chat", "m")
	parts, ok := scenarioFor("chat-parts", "m")
	require.True(t, ok)
	require.NotEqual(t, string(chat.body), string(parts.body))
	var c struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	var p struct {
		Messages []struct{ Content []struct{ Type, Text string } } `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(chat.body, &c))
	require.NoError(t, json.Unmarshal(parts.body, &p))
	require.Equal(t, c.Messages[0].Content, p.Messages[0].Content[0].Text)
	runOnMock(t, "-scenario", "chat-parts", "-c", "2", "-d", "200ms", "-warmup", "0s")
}

// runOnMock runs loadgen with args against a mock and returns its result,
// which has requests and no error.
func runOnMock(t *testing.T, args ...string) result {
	t.Helper()
	srv := httptest.NewServer(mockllm.New(mockllm.DefaultConfig()))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), append([]string{"-url", srv.URL, "-key", "sk-test", "-model", "mock-gpt"}, args...), &out, io.Discard))
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Zero(t, r.Errors, r.FirstError)
	require.Positive(t, r.Requests)
	return r
}
