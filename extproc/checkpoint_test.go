package extproc

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// checkpoints records what the processor checkpointed, by request id.
type checkpoints struct {
	mu   sync.Mutex
	seen map[string][]kernel.Usage
}

func (c *checkpoints) Checkpoint(id string, u kernel.Usage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string][]kernel.Usage{}
	}
	c.seen[id] = append(c.seen[id], u)
}

// TestStreamChunksAreCheckpointed: every chunk of a stream but the last
// (which settles) tells the checkpointer what an abort at that point would
// charge — the prompt's input estimate and the output streamed so far, never
// decreasing — so that the last checkpoint of a cut stream is its abort
// charge; a non-streamed request checkpoints nothing.
func TestStreamChunksAreCheckpointed(t *testing.T) {
	cp := &checkpoints{}
	e := newTestEnv(t, WithCheckpoints(cp))
	r, _, req := resetStream()
	resp := e.do(t, post("/v1/chat/completions", clientKey, req), (&recorder{resp: r}).upstream)
	require.True(t, resp.Reset)
	recs := e.acct.waitRecords(t, 1)

	cp.mu.Lock()
	seen := cp.seen[recs[0].RequestID]
	cp.mu.Unlock()
	require.NotEmpty(t, seen)
	for i, u := range seen {
		require.Equal(t, translate.EstimateTokens(int64(len("tell me a story"))), u.Input)
		if i > 0 {
			require.GreaterOrEqual(t, u.Output, seen[i-1].Output)
		}
	}
	require.Equal(t, recs[0].Usage, seen[len(seen)-1], "the last checkpoint is the abort's charge")

	e.do(t, post("/v1/chat/completions", clientKey, `{"model":"gpt-4o"}`), (&recorder{resp: jsonResponse(200, chatResponse)}).upstream)
	cp.mu.Lock()
	defer cp.mu.Unlock()
	require.Len(t, cp.seen, 1)
}

// nopCheckpointer measures the processor's side of a checkpoint alone.
type nopCheckpointer struct{}

func (nopCheckpointer) Checkpoint(string, kernel.Usage) {}

// BenchmarkHandleStreamChunkCheckpointed is BenchmarkHandleStreamChunk with
// checkpoints on: the processor's added work per chunk (the accountant's own
// note is accounting.BenchmarkCheckpoint).
func BenchmarkHandleStreamChunkCheckpointed(b *testing.B) {
	benchHandleStreamChunk(b, New(newCatalog(), benchAccountant{}, WithCheckpoints(nopCheckpointer{})))
}

// TestStreamsThatMayHideReasoningAreNotCheckpointed: a stream whose provider
// may bill reasoning it does not stream gets no checkpoint, so an expiry
// charges its worst case rather than less than the bill.
func TestStreamsThatMayHideReasoningAreNotCheckpointed(t *testing.T) {
	cp := &checkpoints{}
	e := newTestEnv(t, WithCheckpoints(cp))
	r, _, _ := resetStream()
	req := `{"model":"gpt-4o","stream":true,"reasoning_effort":"low","messages":[{"role":"user","content":"tell me a story"}]}`
	resp := e.do(t, post("/v1/chat/completions", clientKey, req), (&recorder{resp: r}).upstream)
	require.True(t, resp.Reset)
	recs := e.acct.waitRecords(t, 1)
	require.Positive(t, recs[0].Usage.Output, "the stream ran")
	cp.mu.Lock()
	defer cp.mu.Unlock()
	require.Empty(t, cp.seen)
}
