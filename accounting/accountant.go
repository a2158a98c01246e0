package accounting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Counters are the admission counters an Accountant admits against: the
// kernel's State in this process (LocalCounters), or counters shared by
// replicas through Redis (RedisCounters).
type Counters interface {
	Admit(ctx context.Context, now time.Time, req *kernel.AdmitRequest) (kernel.Decision, error)
	Settle(ctx context.Context, now time.Time, id string, u kernel.Usage, st kernel.Status) (kernel.Settlement, bool, error)
	Expire(ctx context.Context, now time.Time) ([]kernel.Settlement, error)
}

// LocalCounters are counters of one process, over kernel.State.
type LocalCounters struct{ State *kernel.State }

var _ Counters = LocalCounters{}

// Admit implements Counters.
func (c LocalCounters) Admit(_ context.Context, now time.Time, req *kernel.AdmitRequest) (kernel.Decision, error) {
	return c.State.Admit(now, req), nil
}

// Settle implements Counters.
func (c LocalCounters) Settle(_ context.Context, now time.Time, id string, u kernel.Usage, st kernel.Status) (kernel.Settlement, bool, error) {
	s, ok := c.State.Settle(now, id, u, st)
	return s, ok, nil
}

// Expire implements Counters.
func (c LocalCounters) Expire(_ context.Context, now time.Time) ([]kernel.Settlement, error) {
	return c.State.Expire(now), nil
}

// Accountant admits against Counters and records every settlement in the
// store's ledger, which is the truth. With LocalCounters it suits one replica
// (the embedded store) and seeds the counters from the ledger itself; shared
// counters (Redis) seed themselves.
type Accountant struct {
	counters Counters
	local    *kernel.State // nil for shared counters
	ledger   store.Ledger
	spend    store.Spend
	now      func() time.Time
	log      *slog.Logger

	mu     sync.Mutex
	seeded map[seedKey]time.Time // window start seeded from the ledger
	runMu  sync.Mutex            // one run seeded at a time (seedRuns)

	cp checkpointer // the counters' usage checkpoints (nil: none; checkpoint.go)

	ledgerState
}

type seedKey struct {
	ref    kernel.ScopeRef
	period string // kernel.Period.String, the canonical spelling
}

// LedgerSeed returns the function shared counters rebuild a budget window
// with: this replica's queued settlements are flushed first, so the ledger holds
// everything it charged.
func LedgerSeed(st interface {
	store.Ledger
	store.Spend
},
) func(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
	return func(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error) {
		if err := st.Flush(ctx); err != nil {
			return 0, fmt.Errorf("accounting: flush before seeding: %w", err)
		}
		return st.ScopeSpend(ctx, scope, since, until)
	}
}

// NewAccountant returns an accountant over shared counters.
func NewAccountant(c Counters, ledger store.Ledger, now func() time.Time, log *slog.Logger, opts ...Option) *Accountant {
	a := &Accountant{counters: c, ledger: ledger, now: now, log: log, seeded: map[seedKey]time.Time{}}
	a.warnEvery = 10 * time.Second
	for _, o := range opts {
		o(a)
	}
	if cp, ok := c.(checkpointer); ok && cp.checkpointEvery() > 0 {
		a.cp = cp
	}
	if f, ok := c.(ledgerFollower); ok {
		a.follower = f
		f.followLedger()
	}
	return a
}

// NewLocalAccountant returns an accountant over counters in this process,
// seeded from spend.
func NewLocalAccountant(ledger store.Ledger, spend store.Spend, now func() time.Time, log *slog.Logger, opts ...Option) *Accountant {
	st := kernel.NewState()
	a := NewAccountant(LocalCounters{State: st}, ledger, now, log, opts...)
	a.local, a.spend = st, spend
	return a
}

// State exposes the local counters (nil with shared counters).
func (a *Accountant) State() *kernel.State { return a.local }

// Seed loads, from the ledger, the spend of every current budget window that
// has not been seeded yet. Called for every new snapshot before it serves.
func (a *Accountant) Seed(ctx context.Context, scopes []kernel.Scope) error {
	if a.local == nil {
		return nil // shared counters seed themselves from the ledger
	}
	now := a.now()
	var errs []error
	for _, sc := range scopes {
		if sc.Limits == nil {
			continue
		}
		for _, w := range sc.Limits.Budgets {
			start, end := w.Period.Window(now)
			k := seedKey{ref: sc.Ref, period: w.Period.String()}
			a.mu.Lock()
			done := a.seeded[k].Equal(start)
			a.mu.Unlock()
			if done {
				continue
			}
			spent, err := a.spend.ScopeSpend(ctx, sc.Ref, start, end)
			if err != nil {
				errs = append(errs, fmt.Errorf("seed %v: %w", sc.Ref, err))
				continue
			}
			a.local.Seed(sc.Ref, w.Period, start, spent)
			a.mu.Lock()
			a.seeded[k] = start
			a.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// Admit checks and reserves req on every scope at once (req.ID is the
// request id).
func (a *Accountant) Admit(ctx context.Context, req *kernel.AdmitRequest) (kernel.Decision, error) {
	if req.Lease == 0 {
		req.Lease = a.lease
	}
	if a.local != nil {
		if err := a.seedRuns(ctx, req.Scopes); err != nil {
			return kernel.Decision{}, err
		}
	}
	return a.counters.Admit(ctx, a.now(), req)
}

// seedRuns seeds, from the ledger, the budget of every run scope of a
// request that the local counters do not hold (new, or forgotten after its
// TTL): a run's budget covers its whole life. The ledger is flushed first, as
// LedgerSeed does for shared counters: the kernel forgets an idle run whatever
// its settlements' state in the ledger queue, and a seed that missed one still
// queued would let the run overspend its budget. Shared counters seed runs
// themselves, as any window.
func (a *Accountant) seedRuns(ctx context.Context, scopes []kernel.Scope) error {
	for _, sc := range scopes {
		if sc.Ref.Kind != kernel.ScopeRun || sc.Limits == nil || len(sc.Limits.Budgets) == 0 {
			continue
		}
		a.runMu.Lock()
		err := func() error {
			if a.local.Known(sc.Ref) {
				return nil
			}
			if err := a.Flush(ctx); err != nil {
				return fmt.Errorf("accounting: flush before seeding run %s: %w", sc.Ref.ID, err)
			}
			spent, err := a.spend.ScopeSpend(ctx, sc.Ref, time.Time{}, time.Time{})
			if err != nil {
				return fmt.Errorf("accounting: seed run %s: %w", sc.Ref.ID, err)
			}
			a.local.Seed(sc.Ref, kernel.Period{Kind: kernel.PeriodTotal}, time.Time{}, spent)
			return nil
		}()
		a.runMu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// Settle charges the exact cost of a finished request, releases its
// reservation and records it in the ledger; idempotent by e.RequestID. e is the
// ledger entry as the data plane observed it: Settle sets its Cost and EndedAt
// (the settlement time) and returns the cost charged.
func (a *Accountant) Settle(ctx context.Context, e store.LedgerEntry) (kernel.Money, error) {
	return a.settle(ctx, e, nil)
}

// SettleAt is Settle at price p instead of the price the request was
// admitted at (kernel.State.SettleAt): a pass-through reply names the model
// that served it, and the request is charged at that model's price. Counters
// without SettleAt (a test's fake) settle at the admitted price.
func (a *Accountant) SettleAt(ctx context.Context, e store.LedgerEntry, p kernel.Price) (kernel.Money, error) {
	return a.settle(ctx, e, &p)
}

func (a *Accountant) settle(ctx context.Context, e store.LedgerEntry, p *kernel.Price) (kernel.Money, error) {
	if a.spill != nil {
		if pc, ok := a.counters.(settleCoster); ok {
			if cost, ok := pc.settleCost(e.RequestID, e.Usage, p); ok {
				return a.settleAhead(ctx, e, p, cost) // settle_ahead.go
			}
		}
	}
	return a.settleThenRecord(ctx, e, p)
}

// pricedCounters are Counters that settle at a price other than the
// admitted one.
type pricedCounters interface {
	SettleAt(ctx context.Context, now time.Time, id string, u kernel.Usage, p kernel.Price, st kernel.Status) (kernel.Settlement, bool, error)
}

var (
	_ pricedCounters = LocalCounters{}
	_ pricedCounters = (*RedisCounters)(nil)
)

// SettleAt implements pricedCounters.
func (c LocalCounters) SettleAt(_ context.Context, now time.Time, id string, u kernel.Usage, p kernel.Price, st kernel.Status) (kernel.Settlement, bool, error) {
	s, ok := c.State.SettleAt(now, id, u, p, st)
	return s, ok, nil
}

// settleCounters closes e's reservation in the counters, at p when not nil.
func (a *Accountant) settleCounters(ctx context.Context, now time.Time, e *store.LedgerEntry, p *kernel.Price) (kernel.Settlement, bool, error) {
	if p != nil {
		if pc, ok := a.counters.(pricedCounters); ok {
			return pc.SettleAt(ctx, now, e.RequestID, e.Usage, *p, e.Status)
		}
	}
	return a.counters.Settle(ctx, now, e.RequestID, e.Usage, e.Status)
}

// RecordRefused writes the ledger row of a request refused before admission
// (a guardrail's block, kernel.StatusRefused): cost $0, no reservation
// released and no counter touched, so budgets and the ledger's total are as
// they were; idempotent by e.RequestID like every row.
func (a *Accountant) RecordRefused(ctx context.Context, e store.LedgerEntry) error {
	e.Cost, e.Status = 0, kernel.StatusRefused
	if e.EndedAt.IsZero() {
		e.EndedAt = a.now()
	}
	return a.record(ctx, oneEntry(e))
}

// settleThenRecord closes the reservation in the counters, then records the
// entry.
func (a *Accountant) settleThenRecord(ctx context.Context, e store.LedgerEntry, p *kernel.Price) (kernel.Money, error) {
	s, ok, err := a.settleCounters(ctx, a.now(), &e, p)
	if err != nil {
		return 0, fmt.Errorf("accounting: settle %s: %w", e.RequestID, err)
	}
	if !ok {
		return 0, nil // already settled (or expired): exactly once
	}
	e.Cost, e.EndedAt = s.Cost, s.SettledAt
	e.Unpriced = e.Unpriced || s.Unpriced
	return s.Cost, a.record(ctx, oneEntry(e))
}

// oneEntry is e in a list of one, what Ledger.Append takes: the one
// allocation of a settlement's entry (passing e itself, a variadic argument
// to an interface, was one more, beside the copy the spill's encoding
// already moved to the heap).
func oneEntry(e store.LedgerEntry) []store.LedgerEntry { return []store.LedgerEntry{e} }

// record appends one[0] to the ledger, written ahead to the spill when there
// is one. The ledger holds the charge whatever happens to the request's
// context.
func (a *Accountant) record(ctx context.Context, one []store.LedgerEntry) error {
	e := &one[0]
	appendOne := func() error { return a.appendLedger(ctx, one) }
	if a.spill == nil {
		return appendOne()
	}
	err := a.spill.writeThen(e, appendOne)
	if err == nil || errors.Is(err, errAppend) {
		return err
	}
	if a.spillErr.CompareAndSwap(false, true) {
		a.log.Error("ledger spill write failed; settlements are in memory only until the ledger commits them",
			"request_id", e.RequestID, "err", err)
	}
	return appendOne()
}

// appendLedger queues one[0] for the ledger. The ledger holds the charge
// whatever happens to the request's context.
func (a *Accountant) appendLedger(ctx context.Context, one []store.LedgerEntry) error {
	if err := a.ledger.Append(ctx, one...); err != nil {
		// Keep the entry for the durable record on a fresh context so a
		// cancelled request cannot lose it.
		ctx2, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err2 := a.ledger.Append(ctx2, one...); err2 != nil {
			return fmt.Errorf("accounting: ledger append: %w", errors.Join(err, err2))
		}
	}
	a.noteAppended(one[0].RequestID)
	return nil
}

// requeue queues again an entry whose append failed, once, within ctx (the
// spill's checkpoint: it holds the entry until then).
func (a *Accountant) requeue(ctx context.Context, e *store.LedgerEntry) error {
	if err := a.ledger.Append(ctx, *e); err != nil {
		return err
	}
	a.noteAppended(e.RequestID)
	return nil
}

// noteAppended counts an entry queued for the ledger.
func (a *Accountant) noteAppended(id string) {
	idx := a.appended.Add(1)
	if a.follower != nil {
		a.follower.appended(id, idx)
	}
}

// ExpireLoop settles reservations whose lease ran out, every interval, until
// ctx ends. Beside it, every second, it checkpoints the ledger (watchLedger)
// and syncs shared counters (RedisCounters.Sync: notices a Redis that lost its
// data and re-registers this replica's reservations).
func (a *Accountant) ExpireLoop(ctx context.Context, every time.Duration) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.watchLedger(ctx, time.Second) })
	if s, ok := a.counters.(interface {
		Sync(ctx context.Context, now time.Time) error
	}); ok {
		wg.Go(func() {
			everyTick(ctx, time.Second, func() {
				if err := s.Sync(ctx, a.now()); err != nil {
					a.log.Debug("counters sync failed; retrying at the next tick", "err", err)
				}
			})
		})
	}
	if a.cp != nil {
		wg.Go(func() {
			everyTick(ctx, a.cp.checkpointEvery(), func() {
				if err := a.cp.WriteCheckpoints(ctx, a.now()); err != nil {
					a.log.Debug("usage checkpoints not written; retrying at the next tick", "err", err)
				}
			})
		})
	}
	everyTick(ctx, every, func() { a.ExpireNow(ctx) })
}

// everyTick calls f every interval until ctx ends.
func everyTick(ctx context.Context, every time.Duration, f func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}

// ExpireNow settles the reservations whose lease ended by now: the counters
// charge a stream the usage of its last checkpoint plus an allowance, and
// anything else its worst-case cost (the reservation is the only bound known
// on what the provider did), and the ledger gets an expired entry — unless it
// already holds the request (the ledger keeps the first entry of a request
// id), e.g. a settlement replayed from a crashed replica's spill.
func (a *Accountant) ExpireNow(ctx context.Context) {
	expired, err := a.counters.Expire(ctx, a.now())
	if err != nil {
		a.log.Warn("expiring reservations failed; retrying at the next tick", "err", err)
	}
	for _, s := range expired {
		if err := a.record(ctx, oneEntry(expiredEntry(s))); err != nil {
			a.log.Error("ledger append of an expired reservation failed", "request_id", s.ID, "err", err)
		}
	}
}

// expiredEntry records a reservation settled by its lease: the scopes come
// from the settlement itself.
func expiredEntry(s kernel.Settlement) store.LedgerEntry {
	e := store.LedgerEntry{
		RequestID: s.ID,
		Model:     s.Model,
		Usage:     s.Usage,
		Cost:      s.Cost,
		Status:    kernel.StatusExpired,
		StartedAt: s.AdmittedAt,
		EndedAt:   s.SettledAt,
		Unpriced:  s.Unpriced,
	}
	for _, r := range s.Scopes {
		switch r.Kind {
		case kernel.ScopeKey:
			e.KeyID = r.ID
		case kernel.ScopeUser:
			e.UserID = r.ID
		case kernel.ScopeTeam:
			e.TeamID = r.ID
		case kernel.ScopeOrg:
			e.OrgID = r.ID
		case kernel.ScopeCustomer:
			e.CustomerID = r.ID
		case kernel.ScopeRun:
			e.RunID = r.ID
		case kernel.ScopeTag: // only the tags with a budget: the others were not admitted against
			e.Tags = append(e.Tags, r.ID)
		case kernel.ScopeGlobal:
		}
	}
	return e
}

// Usage is the spent money of ref's budget window of p current at now, as
// the counters hold it (what budget alerts compare with the limit).
func (a *Accountant) Usage(ctx context.Context, ref kernel.ScopeRef, p kernel.Period, now time.Time) (kernel.Money, error) {
	if a.local != nil {
		spent, _ := a.local.Usage(ref, p, now)
		return spent, nil
	}
	u, ok := a.counters.(interface {
		Usage(ctx context.Context, ref kernel.ScopeRef, p kernel.Period, now time.Time) (kernel.Money, kernel.Money, error)
	})
	if !ok {
		return 0, fmt.Errorf("accounting: the counters do not report usage")
	}
	spent, _, err := u.Usage(ctx, ref, p, now)
	return spent, err
}
