package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

// Settler settles an ended batch: it charges each line's entry (idempotent
// by request id, as the ledger is) and releases what is left of the batch's
// reservation (idempotent by reservation id).
type Settler interface {
	SettleBatch(ctx context.Context, p *Pending, entries []store.LedgerEntry) error
}

// SettlerFunc adapts a function to Settler.
type SettlerFunc func(ctx context.Context, p *Pending, entries []store.LedgerEntry) error

// SettleBatch calls f.
func (f SettlerFunc) SettleBatch(ctx context.Context, p *Pending, entries []store.LedgerEntry) error {
	return f(ctx, p, entries)
}

// Work is more deferred work the poller's lease drives (the background
// responses nobody polls: gateway/background.go), so that one replica does
// all of it.
type Work interface {
	// Waiting reports whether there is anything to do; it only reads, since
	// an idle poller takes no lease.
	Waiting(ctx context.Context) (bool, error)
	// Do does it, under the lease, and returns how many it settled.
	Do(ctx context.Context) (int, error)
}

// Poller settles ended batches; one replica at a time polls (the store's
// lease), so a provider is asked once per interval whatever the replicas.
type Poller struct {
	st        *Store
	providers func(ctx context.Context, p *Pending) (Provider, error)
	settler   Settler
	work      []Work
	holder    string
	lease     time.Duration
	now       func() time.Time
	log       *slog.Logger
}

// PollerOption configures a Poller.
type PollerOption func(*Poller)

// WithClock sets the clock (tests).
func WithClock(now func() time.Time) PollerOption { return func(p *Poller) { p.now = now } }

// WithLogger sets the logger (default: discard).
func WithLogger(l *slog.Logger) PollerOption { return func(p *Poller) { p.log = l } }

// WithLease sets how long a poller keeps the lease between ticks (default
// one minute; make it longer than the polling interval).
func WithLease(d time.Duration) PollerOption { return func(p *Poller) { p.lease = d } }

// WithWork adds work the poller does under its lease at each tick, after
// the batches.
func WithWork(w ...Work) PollerOption { return func(p *Poller) { p.work = append(p.work, w...) } }

// NewPoller returns a poller named holder (unique per replica) over the
// pending batches of st; providers gives the Provider of a batch (its
// provider's API and credential).
func NewPoller(st *Store, holder string, providers func(context.Context, *Pending) (Provider, error), settler Settler, opts ...PollerOption) *Poller {
	p := &Poller{st: st, providers: providers, settler: settler, holder: holder, lease: time.Minute, now: time.Now, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Tick polls every pending batch once, when this replica holds the lease,
// and settles those that ended, then does the work of WithWork; it returns
// how many it settled. A failure on one batch is logged and the others go
// on; it is tried again next tick.
//
// With nothing pending it only reads: the lease (a store write, which every
// replica's configuration watch sees) is taken only when there is work.
func (p *Poller) Tick(ctx context.Context) (int, error) {
	pending, err := p.st.List(ctx)
	if err != nil {
		return 0, err
	}
	var work []Work
	var errs []error
	for _, w := range p.work {
		ok, err := w.Waiting(ctx)
		errs = append(errs, err)
		if ok {
			work = append(work, w)
		}
	}
	if len(pending) == 0 && len(work) == 0 {
		return 0, errors.Join(errs...)
	}
	ok, err := p.st.Acquire(ctx, p.holder, p.now(), p.lease)
	if err != nil || !ok {
		return 0, errors.Join(append(errs, err)...)
	}
	settled := 0
	for i := range pending {
		b := &pending[i]
		done, err := p.settle(ctx, b)
		if err != nil {
			p.log.ErrorContext(ctx, "batch: settling", "batch", b.ID, "provider", b.Provider, "error", err)
			errs = append(errs, err)
		}
		if done {
			settled++
		}
	}
	for _, w := range work {
		n, err := w.Do(ctx)
		settled += n
		errs = append(errs, err)
	}
	return settled, errors.Join(errs...)
}

// settle polls one batch and, once ended, settles it and forgets it. The
// order (settle, then forget) makes a crash in between harmless: the next
// tick settles again, and settling is idempotent.
func (p *Poller) settle(ctx context.Context, b *Pending) (bool, error) {
	prov, err := p.providers(ctx, b)
	if err != nil {
		return false, err
	}
	ended, lines, err := prov.Poll(ctx, b)
	if err != nil || !ended {
		return false, err
	}
	if err := p.settler.SettleBatch(ctx, b, b.Entries(lines, p.now().UTC())); err != nil {
		return false, fmt.Errorf("batch %s: %w", b.ID, err)
	}
	p.log.InfoContext(ctx, "batch: settled", "batch", b.ID, "lines", len(lines), "of", b.Lines)
	return true, p.st.Done(ctx, b.ID)
}

// Loop ticks every interval until ctx ends.
func (p *Poller) Loop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := p.Tick(ctx); err != nil && ctx.Err() == nil {
			p.log.WarnContext(ctx, "batch: poll", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// LedgerSettler settles into a ledger only: each line's entry, appended
// (the ledger records a request id once). It releases no reservation; the
// gateway's Settler is accounting.Accountant.SettleBatch (the reservation
// settled with the lines' total, each line in the ledger):
//
//	batch.SettlerFunc(func(ctx context.Context, p *batch.Pending, es []store.LedgerEntry) error {
//		return acct.SettleBatch(ctx, p.ReservationID, es)
//	})
type LedgerSettler struct{ Ledger store.Ledger }

// SettleBatch appends the entries and waits until they are durable.
func (s LedgerSettler) SettleBatch(ctx context.Context, _ *Pending, entries []store.LedgerEntry) error {
	if len(entries) == 0 {
		return nil
	}
	if err := s.Ledger.Append(ctx, entries...); err != nil {
		return err
	}
	return s.Ledger.Flush(ctx)
}
