package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// recorder is a FlushFunc that remembers every batch it wrote.
type recorder struct {
	mu      sync.Mutex
	batches [][]string
	delay   time.Duration
	fail    int // fail this many calls before succeeding
	calls   int
	gate    chan struct{} // when set, each call waits for it (or ctx)
}

func (r *recorder) flush(ctx context.Context, batch []store.LedgerEntry) error {
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if r.delay > 0 {
		time.Sleep(r.delay)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls <= r.fail {
		return fmt.Errorf("injected failure %d", r.calls)
	}
	ids := make([]string, len(batch))
	for i := range batch {
		ids[i] = batch[i].RequestID
	}
	r.batches = append(r.batches, ids)
	return nil
}

func (r *recorder) written() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.batches {
		out = append(out, b...)
	}
	return out
}

func (r *recorder) batchCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.batches)
}

func entry(id string) store.LedgerEntry {
	return store.LedgerEntry{RequestID: id, KeyID: "k", Cost: 1, EndedAt: time.Unix(0, 0)}
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func closeWriter(t *testing.T, w *groupcommit.Writer) {
	t.Helper()
	require.NoError(t, w.Close(ctxTimeout(t, 10*time.Second)))
}

func TestWriterBatchesConcurrentAppends(t *testing.T) {
	rec := &recorder{delay: time.Millisecond}
	w := groupcommit.New(rec.flush, groupcommit.WithMaxBatch(64))
	const appenders, each = 8, 400
	var wg sync.WaitGroup
	for g := range appenders {
		wg.Go(func() {
			for i := range each {
				require.NoError(t, w.Append(t.Context(), entry(fmt.Sprintf("g%d-%d", g, i))))
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Flush(ctxTimeout(t, 10*time.Second)))
	closeWriter(t, w)

	got := rec.written()
	require.Len(t, got, appenders*each)
	seen := map[string]bool{}
	for _, id := range got {
		require.False(t, seen[id], "written twice: %s", id)
		seen[id] = true
	}
	rec.mu.Lock()
	for _, b := range rec.batches {
		require.LessOrEqual(t, len(b), 64)
	}
	rec.mu.Unlock()
	// Each write takes ≥ 1 ms while 8 goroutines keep appending: the writer
	// must have grouped many entries per write.
	require.Less(t, rec.batchCount(), appenders*each/4)
	st := w.Stats()
	require.Equal(t, uint64(appenders*each), st.Entries)
	require.Equal(t, uint64(rec.batchCount()), st.Batches)
	require.Zero(t, st.QueueDepth)
}

func TestWriterKeepsAppendOrder(t *testing.T) {
	rec := &recorder{}
	w := groupcommit.New(rec.flush, groupcommit.WithMaxBatch(7), groupcommit.WithWindow(0))
	var want []string
	for i := range 300 {
		id := fmt.Sprintf("r%03d", i)
		want = append(want, id)
		// Mix single and multi-entry appends.
		if i%3 == 0 {
			require.NoError(t, w.Append(t.Context(), entry(id)))
			continue
		}
		require.NoError(t, w.Append(t.Context(), entry(id)))
	}
	require.NoError(t, w.Append(t.Context(), entry("m1"), entry("m2"), entry("m3")))
	want = append(want, "m1", "m2", "m3")
	closeWriter(t, w)
	require.Equal(t, want, rec.written())
}

func TestWriterWindowGroupsIdleAppends(t *testing.T) {
	rec := &recorder{}
	w := groupcommit.New(rec.flush, groupcommit.WithWindow(300*time.Millisecond))
	for i := range 20 {
		require.NoError(t, w.Append(t.Context(), entry(fmt.Sprint(i))))
	}
	// No Flush: the window alone ends the batch.
	require.Eventually(t, func() bool { return len(rec.written()) == 20 }, 5*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, rec.batchCount())
	closeWriter(t, w)
}

func TestWriterBackpressure(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	w := groupcommit.New(rec.flush, groupcommit.WithQueueSize(4), groupcommit.WithMaxBatch(2), groupcommit.WithWindow(0))

	// The first batch is taken and blocks in flush; then the queue fills.
	require.NoError(t, w.Append(t.Context(), entry("a"), entry("b")))
	require.Eventually(t, func() bool { return w.Stats().QueueDepth == 2 && len(rec.written()) == 0 }, 5*time.Second, time.Millisecond)
	require.NoError(t, w.Append(t.Context(), entry("c"), entry("d"), entry("e"), entry("f")))
	require.Equal(t, 6, w.Stats().QueueDepth)

	err := w.Append(ctxTimeout(t, 30*time.Millisecond), entry("g"))
	require.ErrorIs(t, err, store.ErrQueueFull)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A blocked Append proceeds once the writer makes room.
	appended := make(chan error, 1)
	go func() { appended <- w.Append(ctxTimeout(t, 10*time.Second), entry("g")) }()
	select {
	case err := <-appended:
		t.Fatalf("Append returned %v while the queue was full", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(rec.gate)
	require.NoError(t, <-appended)
	closeWriter(t, w)
	require.Equal(t, []string{"a", "b", "c", "d", "e", "f", "g"}, rec.written())
}

func TestWriterFlush(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	w := groupcommit.New(rec.flush, groupcommit.WithWindow(time.Hour))
	defer closeWriter(t, w)

	require.NoError(t, w.Flush(t.Context()), "nothing appended: nothing to wait for")

	require.NoError(t, w.Append(t.Context(), entry("a"), entry("b")))
	err := w.Flush(ctxTimeout(t, 30*time.Millisecond))
	require.ErrorIs(t, err, context.DeadlineExceeded, "flush is blocked, so Flush cannot return nil")

	done := make(chan error, 1)
	go func() { done <- w.Flush(ctxTimeout(t, 10*time.Second)) }()
	close(rec.gate)
	require.NoError(t, <-done)
	// Flush bypasses the (hour-long) window and returns only after the write.
	require.ElementsMatch(t, []string{"a", "b"}, rec.written())
}

func TestWriterRetriesFailedBatch(t *testing.T) {
	rec := &recorder{fail: 3}
	w := groupcommit.New(rec.flush, groupcommit.WithWindow(0), groupcommit.WithRetry(func(int) time.Duration { return time.Millisecond }))
	require.NoError(t, w.Append(t.Context(), entry("a"), entry("b"), entry("c")))
	require.NoError(t, w.Flush(ctxTimeout(t, 10*time.Second)))
	st := w.Stats()
	require.Equal(t, uint64(3), st.FlushErrors)
	require.Equal(t, uint64(1), st.Batches)
	require.Equal(t, []string{"a", "b", "c"}, rec.written())
	closeWriter(t, w)
}

func TestWriterCloseDrains(t *testing.T) {
	rec := &recorder{delay: 2 * time.Millisecond}
	w := groupcommit.New(rec.flush, groupcommit.WithMaxBatch(50), groupcommit.WithWindow(time.Hour))
	for i := range 1000 {
		require.NoError(t, w.Append(t.Context(), entry(fmt.Sprint(i))))
	}
	closeWriter(t, w)
	require.Len(t, rec.written(), 1000)
	require.ErrorIs(t, w.Append(t.Context(), entry("late")), store.ErrClosed)
	require.NoError(t, w.Flush(t.Context()))
	require.NoError(t, w.Close(t.Context()), "second Close")
}

func TestWriterCloseGivesUpWhenContextEnds(t *testing.T) {
	rec := &recorder{fail: 1 << 30}
	w := groupcommit.New(rec.flush, groupcommit.WithRetry(func(int) time.Duration { return time.Millisecond }))
	require.NoError(t, w.Append(t.Context(), entry("a"), entry("b")))
	err := w.Close(ctxTimeout(t, 50*time.Millisecond))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "2 entries not written")
	require.ErrorContains(t, err, "injected failure")
	require.Positive(t, w.Stats().FlushErrors)
	require.Empty(t, rec.written())
}

func TestWriterCloseUnblocksAppend(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	w := groupcommit.New(rec.flush, groupcommit.WithQueueSize(1), groupcommit.WithMaxBatch(1), groupcommit.WithWindow(0))
	require.NoError(t, w.Append(t.Context(), entry("a")))
	require.Eventually(t, func() bool { return w.Stats().QueueDepth == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, w.Append(t.Context(), entry("b")))
	blocked := make(chan error, 1)
	go func() { blocked <- w.Append(ctxTimeout(t, 10*time.Second), entry("c")) }()
	closed := make(chan error, 1)
	go func() { closed <- w.Close(ctxTimeout(t, 10*time.Second)) }()
	err := <-blocked
	require.True(t, errors.Is(err, store.ErrClosed) || err == nil, "got %v", err)
	close(rec.gate)
	require.NoError(t, <-closed)
	if err == nil {
		require.Equal(t, []string{"a", "b", "c"}, rec.written())
	} else {
		require.Equal(t, []string{"a", "b"}, rec.written())
	}
}
