package groupcommit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

// FlushFunc writes one batch in one transaction. It must be idempotent by
// request id (a batch may be retried after a failure whose commit actually
// succeeded, and a request id may repeat within a batch or across batches) and
// must not keep the slice after it returns.
type FlushFunc func(ctx context.Context, batch []store.LedgerEntry) error

// Backoff says how long to wait before retry number attempt (1, 2, …) of a
// batch whose flush failed.
type Backoff func(attempt int) time.Duration

// Exponential returns a Backoff that starts at first and doubles up to max.
func Exponential(first, maxWait time.Duration) Backoff {
	return func(attempt int) time.Duration {
		d := first
		for i := 1; i < attempt && d < maxWait; i++ {
			d *= 2
		}
		return min(d, maxWait)
	}
}

// Defaults of the options.
const (
	DefaultWindow    = 2 * time.Millisecond
	DefaultMaxBatch  = 1024
	DefaultQueueSize = 65536
)

type config struct {
	window    time.Duration
	maxBatch  int
	queueSize int
	backoff   Backoff
	log       *slog.Logger
}

// Option configures a Writer.
type Option func(*config)

// WithWindow sets how long an idle writer waits for a batch to fill after the
// first entry arrives (0: write at once). A writer that is busy never waits:
// what arrived during the previous write is the next batch.
func WithWindow(d time.Duration) Option {
	return func(c *config) { c.window = max(d, 0) }
}

// WithMaxBatch bounds the entries of one batch (one transaction).
func WithMaxBatch(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBatch = n
		}
	}
}

// WithQueueSize bounds the entries waiting to be written; Append blocks beyond it.
func WithQueueSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.queueSize = n
		}
	}
}

// WithRetry sets the wait between attempts to write a batch that failed.
func WithRetry(b Backoff) Option {
	return func(c *config) {
		if b != nil {
			c.backoff = b
		}
	}
}

// WithLogger sets where failed flushes are logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// Stats are the writer's counters.
type Stats struct {
	Batches     uint64 // batches written
	Entries     uint64 // entries written (repeated request ids included)
	FlushErrors uint64 // failed attempts to write a batch (each one retried)
	QueueDepth  int    // entries appended and not yet written
	// FlushTime is the time spent writing batches, failed attempts included:
	// over Batches, the mean commit latency.
	FlushTime time.Duration
}

// Writer queues ledger entries and writes them in batches through a FlushFunc,
// from a single goroutine, in the order they were appended.
type Writer struct {
	flush FlushFunc
	cfg   config

	mu       sync.Mutex
	queue    [][]store.LedgerEntry // appended, not yet taken: batches of ≤ maxBatch, oldest first
	queued   int                   // entries in queue
	free     [][]store.LedgerEntry // written batches' arrays, reused for queue
	space    chan struct{}         // closed (and replaced) when queue shrinks
	inflight int                   // entries of the batch being written
	appended uint64                // entries ever accepted
	durable  uint64                // entries ever written: always a prefix of appended
	waiters  []waiter              // Flush calls, by ascending seq
	closed   bool
	lastErr  error

	wake   chan struct{} // cap 1: queue became non-empty
	urgent chan struct{} // cap 1: write without waiting for the window
	stop   chan struct{} // closed by Close once it no longer needs the loop
	done   chan struct{} // closed when the loop returns

	ctx    context.Context // the loop's; cancelled when Close gives up
	cancel context.CancelFunc

	batches, entries, flushErrors atomic.Uint64
	flushNanos                    atomic.Int64 // time spent in flush, failed attempts included
}

type waiter struct {
	seq uint64
	ch  chan struct{}
}

// New starts a writer that writes batches with flush. Close stops it.
func New(flush FlushFunc, opts ...Option) *Writer {
	cfg := config{
		window:    DefaultWindow,
		maxBatch:  DefaultMaxBatch,
		queueSize: DefaultQueueSize,
		backoff:   Exponential(5*time.Millisecond, time.Second),
		log:       slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		flush:  flush,
		cfg:    cfg,
		space:  make(chan struct{}),
		wake:   make(chan struct{}, 1),
		urgent: make(chan struct{}, 1),
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		ctx:    ctx,
		cancel: cancel,
	}
	go w.run()
	return w
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Append queues entries. When the queue is full it waits for room; if ctx ends
// first it returns an error matching store.ErrQueueFull (entries before the
// one that did not fit stay queued; appending them again is harmless, since
// writes are idempotent by request id). After Close it returns store.ErrClosed.
func (w *Writer) Append(ctx context.Context, entries ...store.LedgerEntry) error {
	w.mu.Lock()
	for {
		if w.closed {
			w.mu.Unlock()
			return store.ErrClosed
		}
		if len(entries) == 0 {
			break
		}
		room := w.cfg.queueSize - w.queued
		if room <= 0 {
			space := w.space
			w.mu.Unlock()
			select {
			case <-space:
			case <-ctx.Done():
				return fmt.Errorf("%w: %w", store.ErrQueueFull, ctx.Err())
			}
			w.mu.Lock()
			continue
		}
		for n := min(room, len(entries)); n > 0; {
			last := len(w.queue) - 1
			if last < 0 || len(w.queue[last]) == w.cfg.maxBatch {
				w.queue = append(w.queue, w.chunk())
				last++
			}
			k := min(n, w.cfg.maxBatch-len(w.queue[last]))
			w.queue[last] = append(w.queue[last], entries[:k]...)
			entries, n = entries[k:], n-k
			w.queued += k
			w.appended += uint64(k)
		}
		signal(w.wake)
		if w.queued >= w.cfg.maxBatch {
			signal(w.urgent)
		}
	}
	w.mu.Unlock()
	return nil
}

// Flush returns once every entry appended before the call is written. If ctx
// ends first it returns ctx's error joined with the last flush error, if any.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	target := w.appended
	if w.durable >= target {
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	w.waiters = append(w.waiters, waiter{seq: target, ch: ch})
	w.mu.Unlock()
	signal(w.urgent)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return w.failure(ctx.Err())
	case <-w.done:
		w.mu.Lock()
		ok := w.durable >= target
		w.mu.Unlock()
		if ok {
			return nil
		}
		return w.failure(store.ErrClosed)
	}
}

func (w *Writer) failure(cause error) error {
	w.mu.Lock()
	last := w.lastErr
	w.mu.Unlock()
	if last != nil {
		return fmt.Errorf("groupcommit: flush: %w (last write error: %w)", cause, last)
	}
	return fmt.Errorf("groupcommit: flush: %w", cause)
}

// Close refuses new entries, writes everything queued and stops the writer.
// If ctx ends first it abandons the entries not yet written and says how many.
// Calling Close again waits for the first call's writer to stop.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		select {
		case <-w.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("groupcommit: close: %w", ctx.Err())
		}
	}
	w.closed = true
	close(w.space) // blocked Appends see closed
	w.space = make(chan struct{})
	w.mu.Unlock()

	err := w.Flush(ctx)
	if err != nil {
		w.cancel()
	}
	close(w.stop)
	<-w.done
	w.cancel()
	if err != nil {
		w.mu.Lock()
		lost := w.appended - w.durable
		w.mu.Unlock()
		return fmt.Errorf("groupcommit: close: %d entries not written: %w", lost, err)
	}
	return nil
}

// Stats returns the writer's counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	depth := w.queued + w.inflight
	w.mu.Unlock()
	return Stats{
		Batches:     w.batches.Load(),
		Entries:     w.entries.Load(),
		FlushErrors: w.flushErrors.Load(),
		FlushTime:   time.Duration(w.flushNanos.Load()),
		QueueDepth:  depth,
	}
}

// run is the group-commit loop: wait for work, give an idle writer one window
// to collect more, then write batches (bounded, non-blocking takes of what is
// queued) until the queue is empty.
func (w *Writer) run() {
	defer close(w.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-w.wake:
		case <-w.urgent:
		case <-w.stop:
			return
		}
		if w.cfg.window > 0 && !w.hurry() {
			timer.Reset(w.cfg.window)
			select {
			case <-timer.C:
			case <-w.urgent:
			case <-w.stop:
			}
			timer.Stop()
		}
		for {
			batch := w.take()
			if len(batch) == 0 {
				break
			}
			if !w.write(batch) {
				return
			}
		}
	}
}

// hurry reports whether someone waits for the queue to be written now.
func (w *Writer) hurry() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.queued >= w.cfg.maxBatch || len(w.waiters) > 0 || w.closed
}

// firstChunk is the capacity of a new batch array. Arrays grow by append up to
// maxBatch and are reused at the size the load made them: a batch array of
// maxBatch entries from the start (4096 × 248 bytes for SQLite) kept 2–3 MiB
// live under any load, which the collector scanned every cycle and counted
// twice in its heap goal.
const firstChunk = 64

// chunk returns an empty array for a batch; w.mu is held.
func (w *Writer) chunk() []store.LedgerEntry {
	if n := len(w.free); n > 0 {
		c := w.free[n-1]
		w.free = w.free[:n-1]
		return c
	}
	return make([]store.LedgerEntry, 0, min(firstChunk, w.cfg.maxBatch, w.cfg.queueSize))
}

// take removes the oldest batch (up to maxBatch entries) from the queue,
// without blocking.
func (w *Writer) take() []store.LedgerEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.queue) == 0 {
		return nil
	}
	batch := w.queue[0]
	w.queue[0] = nil
	w.queue = w.queue[1:]
	w.queued -= len(batch)
	w.inflight = len(batch)
	close(w.space)
	w.space = make(chan struct{})
	return batch
}

// write writes one batch, retrying until it succeeds; false means the writer
// was told to give up.
func (w *Writer) write(batch []store.LedgerEntry) bool {
	for attempt := 1; ; attempt++ {
		t0 := time.Now()
		err := w.flush(w.ctx, batch)
		w.flushNanos.Add(int64(time.Since(t0)))
		if err == nil {
			break
		}
		w.flushErrors.Add(1)
		w.mu.Lock()
		w.lastErr = err
		w.mu.Unlock()
		if w.ctx.Err() != nil {
			return false
		}
		wait := w.cfg.backoff(attempt)
		w.cfg.log.Warn("ledger batch write failed; retrying",
			"entries", len(batch), "attempt", attempt, "retry_in", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-w.ctx.Done():
			t.Stop()
			return false
		}
	}
	w.batches.Add(1)
	w.entries.Add(uint64(len(batch)))

	w.mu.Lock()
	w.durable += uint64(len(batch))
	w.inflight = 0
	w.lastErr = nil
	i := 0
	for ; i < len(w.waiters) && w.waiters[i].seq <= w.durable; i++ {
		close(w.waiters[i].ch)
	}
	w.waiters = append(w.waiters[:0], w.waiters[i:]...)
	clear(batch)
	if len(w.free) < 2 {
		w.free = append(w.free, batch[:0])
	}
	w.mu.Unlock()
	return true
}
