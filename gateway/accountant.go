package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// LocalAccountant admits and settles in this process: kernel.State holds the
// counters, the store's ledger the truth. It suits one replica (the embedded
// store); replicas sharing PostgreSQL use Redis counters instead.
type LocalAccountant struct {
	state  *kernel.State
	ledger store.Ledger
	spend  store.Spend
	now    func() time.Time
	log    *slog.Logger

	mu     sync.Mutex
	seeded map[seedKey]time.Time // window start seeded from the ledger
}

type seedKey struct {
	ref    kernel.ScopeRef
	period string
}

var _ extproc.Accountant = (*LocalAccountant)(nil)

// NewLocalAccountant returns an accountant over the given ledger and spend reader.
func NewLocalAccountant(ledger store.Ledger, spend store.Spend, now func() time.Time, log *slog.Logger) *LocalAccountant {
	return &LocalAccountant{state: kernel.NewState(), ledger: ledger, spend: spend, now: now, log: log, seeded: map[seedKey]time.Time{}}
}

// State exposes the counters (tests, metrics).
func (a *LocalAccountant) State() *kernel.State { return a.state }

// Seed loads, from the ledger, the spend of every current budget window that
// has not been seeded yet. Called for every new snapshot before it serves.
func (a *LocalAccountant) Seed(ctx context.Context, scopes []kernel.Scope) error {
	now := a.now()
	var errs []error
	for _, sc := range scopes {
		if sc.Limits == nil {
			continue
		}
		for _, w := range sc.Limits.Budgets {
			start, end := w.Period.Window(now)
			k := seedKey{ref: sc.Ref, period: periodKey(w.Period)}
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
			a.state.Seed(sc.Ref, w.Period, start, spent)
			a.mu.Lock()
			a.seeded[k] = start
			a.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

func periodKey(p kernel.Period) string {
	b, err := p.MarshalJSON()
	if err != nil {
		return fmt.Sprint(p.Kind, p.Every, p.Anchor)
	}
	return string(b)
}

// Admit implements extproc.Accountant.
func (a *LocalAccountant) Admit(_ context.Context, req *kernel.AdmitRequest) (kernel.Decision, error) {
	return a.state.Admit(a.now(), req), nil
}

// Settle implements extproc.Accountant.
func (a *LocalAccountant) Settle(ctx context.Context, rec *extproc.Record) (kernel.Money, error) {
	s, ok := a.state.Settle(a.now(), rec.RequestID, rec.Usage, rec.Status)
	if !ok {
		return 0, nil // already settled (or expired): exactly once
	}
	e := ledgerEntry(rec, s)
	if err := a.ledger.Append(ctx, e); err != nil {
		// The counters already hold the charge; keep the entry for the durable
		// record on a fresh context so a cancelled request cannot lose it.
		ctx2, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err2 := a.ledger.Append(ctx2, e); err2 != nil {
			return s.Cost, fmt.Errorf("gateway: ledger append: %w", errors.Join(err, err2))
		}
	}
	return s.Cost, nil
}

// ExpireLoop settles reservations whose lease ran out, every interval, until
// ctx ends.
func (a *LocalAccountant) ExpireLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, s := range a.state.Expire(a.now()) {
				e := expiredEntry(s)
				if err := a.ledger.Append(ctx, e); err != nil {
					a.log.Error("ledger append of an expired reservation failed", "request_id", s.ID, "err", err)
				}
			}
		}
	}
}

func ledgerEntry(rec *extproc.Record, s kernel.Settlement) store.LedgerEntry {
	e := store.LedgerEntry{
		RequestID:  rec.RequestID,
		CustomerID: rec.CustomerID,
		Model:      rec.Model,
		Deployment: rec.Deployment,
		Usage:      rec.Usage,
		Cost:       s.Cost,
		Status:     rec.Status,
		HTTPStatus: rec.HTTPStatus,
		Stream:     rec.Stream,
		StartedAt:  rec.StartedAt,
		EndedAt:    s.SettledAt,
	}
	if p := rec.Principal; p != nil {
		e.KeyID, e.UserID, e.TeamID, e.OrgID = p.KeyID, p.UserID, p.TeamID, p.OrgID
	}
	return e
}

// expiredEntry records a reservation settled by its lease: the scopes come
// from the settlement itself.
func expiredEntry(s kernel.Settlement) store.LedgerEntry {
	e := store.LedgerEntry{
		RequestID: s.ID,
		Model:     s.Model,
		Cost:      s.Cost,
		Status:    kernel.StatusExpired,
		StartedAt: s.AdmittedAt,
		EndedAt:   s.SettledAt,
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
		case kernel.ScopeGlobal:
		}
	}
	return e
}
