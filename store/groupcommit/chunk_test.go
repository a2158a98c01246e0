package groupcommit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
)

// A light load must not hold maxBatch-sized arrays: batch arrays start small,
// grow by append up to maxBatch, and are reused at the size they grew to.
func TestBatchArraysGrowWithTheLoad(t *testing.T) {
	gate := make(chan struct{})
	var written int
	w := New(func(ctx context.Context, batch []store.LedgerEntry) error {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		written += len(batch)
		return nil
	}, WithMaxBatch(4096), WithWindow(0))
	appendN := func(prefix string, n int) {
		t.Helper()
		for i := range n {
			require.NoError(t, w.Append(t.Context(), store.LedgerEntry{RequestID: fmt.Sprintf("%s-%d", prefix, i)}))
		}
	}
	queued := func() (lens, caps []int) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, c := range w.queue {
			lens, caps = append(lens, len(c)), append(caps, cap(c))
		}
		return lens, caps
	}

	// The first entry is taken at once and its write waits for the gate;
	// what follows stays queued.
	appendN("a", 1)
	require.Eventually(t, func() bool { l, _ := queued(); return len(l) == 0 }, 5*time.Second, time.Millisecond)
	appendN("b", 10)
	lens, caps := queued()
	require.Equal(t, []int{10}, lens)
	require.LessOrEqual(t, caps[0], firstChunk, "a batch of 10 entries holds an array of %d", caps[0])

	// A burst fills batches up to maxBatch and no further.
	appendN("c", 5000)
	lens, _ = queued()
	require.Equal(t, []int{4096, 914}, lens)

	close(gate)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, w.Flush(ctx))
	require.NoError(t, w.Close(ctx))
	require.Equal(t, 5011, written)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.free {
		require.Empty(t, c)
		for _, e := range c[:cap(c)] {
			require.Empty(t, e.RequestID, "a reused array keeps a written entry")
		}
	}
}
