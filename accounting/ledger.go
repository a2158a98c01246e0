package accounting

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

// Option configures an Accountant.
type Option func(*Accountant)

// WithSpill writes every settlement ahead to s before it is queued for the
// ledger (see Spill).
func WithSpill(s *Spill) Option { return func(a *Accountant) { a.spill = s } }

// WithLease sets how long a reservation lives unsettled before ExpireLoop
// settles it (kernel.AdmitRequest.Lease; default kernel.DefaultLease). A
// request still running past its lease is settled by expiry (its worst cost)
// and its own settlement then finds nothing to settle: keep the lease above
// the longest request (the route timeout) a deployment allows.
func WithLease(d time.Duration) Option { return func(a *Accountant) { a.lease = d } }

// WithLedgerWarnEvery sets how often, at most, the accountant logs that the
// ledger cannot flush (default 10s).
func WithLedgerWarnEvery(d time.Duration) Option {
	return func(a *Accountant) { a.warnEvery = d }
}

// ledgerState is what the accountant knows of the ledger's progress.
type ledgerState struct {
	spill     *Spill
	lease     time.Duration // 0: kernel.DefaultLease
	warnEvery time.Duration
	appended  atomic.Int64 // entries appended to the ledger by this accountant
	durable   atomic.Int64 // of those, how many a successful flush covered
	lastWarn  time.Time    // watchLedger's goroutine only
	spillErr  atomic.Bool  // a spill write failed (logged once)
	follower  ledgerFollower
}

// Pending is the number of settlements this accountant appended to the ledger
// that no flush has yet confirmed durable: the ledger queue's depth, as of the
// last checkpoint (at most a second old while the ledger is healthy).
func (a *Accountant) Pending() int {
	return int(a.appended.Load() - a.durable.Load())
}

// watchLedger checkpoints the ledger every interval until ctx ends: one flush
// (bounded by five intervals) confirms what was appended before it, and lets
// the spill delete its files. While the ledger cannot flush, it logs a warning
// at most every warnEvery, with the number of settlements waiting.
func (a *Accountant) watchLedger(ctx context.Context, every time.Duration) {
	everyTick(ctx, every, func() {
		err := a.checkpoint(ctx, 5*every)
		if err == nil || ctx.Err() != nil {
			return
		}
		if now := time.Now(); now.Sub(a.lastWarn) >= a.warnEvery {
			a.lastWarn = now
			a.log.Warn("ledger cannot flush: settlements are waiting to be written", "pending", a.Pending(),
				"spill", a.spill != nil, "err", err)
		}
	})
}

// Flush returns once every settlement recorded so far is durable in the
// ledger (a checkpoint: the spill deletes what the flush covered).
func (a *Accountant) Flush(ctx context.Context) error {
	return a.checkpoint(ctx, time.Minute)
}

// checkpoint flushes the ledger and records what it made durable.
func (a *Accountant) checkpoint(ctx context.Context, timeout time.Duration) error {
	n := a.appended.Load()
	if n == a.durable.Load() && (a.spill == nil || !a.spill.retrying()) {
		return nil // nothing new since the last checkpoint
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if a.spill != nil {
		err = a.spill.checkpoint(fctx, a.ledger, func(e *store.LedgerEntry) error { return a.requeue(fctx, e) })
	} else {
		err = a.ledger.Flush(fctx)
	}
	if err != nil {
		return err
	}
	if a.follower != nil {
		a.follower.durable(n)
	}
	for d := a.durable.Load(); d < n && !a.durable.CompareAndSwap(d, n); d = a.durable.Load() {
	}
	return nil
}
