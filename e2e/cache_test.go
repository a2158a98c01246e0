package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
)

// TestCacheReplayedStreamsParseWithTheSDKs turns the exact cache on for the
// demo group (CLI) and, with each official SDK, sends a deterministic request
// plain (a miss) then streamed (a hit): the SDK parses the replayed stream
// into the same answer, and the mock provider receives one request only.
func TestCacheReplayedStreamsParseWithTheSDKs(t *testing.T) {
	s := startSystem(t)
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk", "@google/genai"} {
		testenv.NodePackage(t, pkg)
	}
	s.cli(nil, nil, "model", "update", "demo", "--cache", "exact", "--cache-ttl", "10m")
	// The snapshot reaches the processor shortly after the update.
	require.Eventually(t, func() bool {
		_, h, _ := s.post(s.demoKey, "/v1/chat/completions", `{"model":"demo","messages":[{"role":"user","content":"probe"}],"max_tokens":1}`)
		return h.Get("x-tollgate-cache") != ""
	}, 20*time.Second, 50*time.Millisecond)
	requests := func() int64 {
		var n int64
		for _, u := range s.mockStats() {
			n += u.Requests
		}
		return n
	}

	t.Run("openai chat", func(t *testing.T) {
		n := requests()
		var out struct {
			First, Second, Age, Want, Text, Finish string
			Usage                                  *struct {
				Prompt     int64 `json:"prompt_tokens"`
				Completion int64 `json:"completion_tokens"`
			}
			Chunks int
		}
		s.node("cache.mjs", "chat", s.demoKey, &out)
		require.Equal(t, "miss", out.First)
		require.Equal(t, "hit", out.Second)
		require.NotEmpty(t, out.Age)
		require.NotEmpty(t, out.Want)
		require.Equal(t, out.Want, out.Text)
		require.NotEmpty(t, out.Finish)
		require.NotNil(t, out.Usage)
		require.Positive(t, out.Usage.Completion)
		require.Equal(t, n+1, requests())
	})
	t.Run("openai responses", func(t *testing.T) {
		n := requests()
		var out struct {
			First, Second, Want, Text, FinalText, Status string
			Types                                        []string
			Seq                                          []int
		}
		s.node("cache.mjs", "responses", s.demoKey, &out)
		require.Equal(t, "miss", out.First)
		require.Equal(t, "hit", out.Second)
		require.Equal(t, out.Want, out.Text)
		require.Equal(t, out.Want, out.FinalText)
		require.Equal(t, "completed", out.Status)
		require.Equal(t, "response.created", out.Types[0])
		require.Equal(t, "response.completed", out.Types[len(out.Types)-1])
		for i, n := range out.Seq {
			require.Equal(t, i, n)
		}
		require.Equal(t, n+1, requests())
	})
	t.Run("anthropic messages", func(t *testing.T) {
		n := requests()
		var out struct {
			First, Second, Want, Text, Stop string
			Usage                           struct {
				Input  int64 `json:"input_tokens"`
				Output int64 `json:"output_tokens"`
			}
			Events []string
		}
		s.node("cache.mjs", "messages", s.demoKey, &out)
		require.Equal(t, "miss", out.First)
		require.Equal(t, "hit", out.Second)
		require.Equal(t, out.Want, out.Text)
		require.NotEmpty(t, out.Stop)
		require.Positive(t, out.Usage.Output)
		require.Equal(t, "message_start", out.Events[0])
		require.Equal(t, "message_stop", out.Events[len(out.Events)-1])
		require.Equal(t, n+1, requests())
	})
	t.Run("genai", func(t *testing.T) {
		n := requests()
		var out struct {
			Want, Text, Finish string
			Usage              struct {
				Candidates int64 `json:"candidatesTokenCount"`
			}
			Chunks int
		}
		s.node("cache.mjs", "gemini", s.demoKey, &out)
		require.NotEmpty(t, out.Want)
		require.Equal(t, out.Want, out.Text)
		require.NotEmpty(t, out.Finish)
		require.Positive(t, out.Usage.Candidates)
		require.Equal(t, n+1, requests())
	})
}
