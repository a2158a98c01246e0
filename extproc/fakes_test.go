package extproc

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// fakeCatalog is an in-memory Catalog: keys by secret, one target per model.
type fakeCatalog struct {
	keys      map[string]*Principal
	allowed   map[string][]string          // key id → models; absent means all
	targets   map[string]*translate.Target // public model name → deployment
	customers map[string]kernel.Scope
	tags      map[string]kernel.Scope // tags with limits (tags.go)
	authErr   error                   // returned by Authenticate for every key when set
}

var (
	_ Catalog    = (*fakeCatalog)(nil)
	_ TagCatalog = (*fakeCatalog)(nil)
)

func (c *fakeCatalog) TagScope(tag string) (kernel.Scope, bool) {
	s, ok := c.tags[tag]
	return s, ok
}

func (c *fakeCatalog) Authenticate(_ context.Context, secret string) (*Principal, error) {
	if c.authErr != nil {
		return nil, c.authErr
	}
	if p, ok := c.keys[secret]; ok {
		return p, nil
	}
	return nil, ErrUnauthorized
}

func (c *fakeCatalog) may(p *Principal, model string) bool {
	list, ok := c.allowed[p.KeyID]
	return !ok || slices.Contains(list, model)
}

func (c *fakeCatalog) Resolve(_ context.Context, p *Principal, model string) (*translate.Target, error) {
	t, ok := c.targets[model]
	if !ok {
		return nil, ErrModelNotFound
	}
	if !c.may(p, model) {
		return nil, ErrModelNotAllowed
	}
	cp := *t
	return &cp, nil
}

func (c *fakeCatalog) Models(_ context.Context, p *Principal) []ModelInfo {
	var out []ModelInfo
	for name := range c.targets {
		if c.may(p, name) {
			out = append(out, ModelInfo{ID: name, OwnedBy: "acme", Created: time.Unix(1700000000, 0)})
		}
	}
	return out
}

func (c *fakeCatalog) Customer(_ context.Context, id string) (kernel.Scope, bool) {
	s, ok := c.customers[id]
	return s, ok
}

// stateAccountant is an Accountant over the real kernel.State, with a clock,
// that also records every call and fails the test on a second settle.
type stateAccountant struct {
	t   testing.TB
	now func() time.Time

	mu       sync.Mutex
	st       *kernel.State
	admitErr error
	decide   func(*kernel.AdmitRequest) *kernel.Decision // overrides the kernel when non-nil
	admits   []kernel.AdmitRequest
	records  []Record
	settled  map[string]int
	changed  chan struct{}
}

var _ Accountant = (*stateAccountant)(nil)

func newStateAccountant(t testing.TB) *stateAccountant {
	return &stateAccountant{
		t: t, now: time.Now, st: kernel.NewState(),
		settled: map[string]int{}, changed: make(chan struct{}, 1024),
	}
}

func (a *stateAccountant) Admit(_ context.Context, req *kernel.AdmitRequest) (kernel.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.admits = append(a.admits, *req)
	if a.admitErr != nil {
		return kernel.Decision{}, a.admitErr
	}
	if a.decide != nil {
		if d := a.decide(req); d != nil {
			if d.Admitted {
				// Keep the kernel's books consistent: reserve for real.
				if kd := a.st.Admit(a.now(), req); !kd.Admitted {
					a.t.Errorf("kernel refused a request the test admitted: %+v", kd)
				}
			}
			return *d, nil
		}
	}
	return a.st.Admit(a.now(), req), nil
}

func (a *stateAccountant) Settle(_ context.Context, rec *Record) (kernel.Money, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.settled[rec.RequestID]++
	if a.settled[rec.RequestID] > 1 {
		a.t.Errorf("request %s settled %d times", rec.RequestID, a.settled[rec.RequestID])
		return 0, errors.New("settled twice")
	}
	a.records = append(a.records, *rec)
	var s kernel.Settlement
	var ok bool
	if rec.Price != nil {
		s, ok = a.st.SettleAt(a.now(), rec.RequestID, rec.Usage, *rec.Price, rec.Status)
	} else {
		s, ok = a.st.Settle(a.now(), rec.RequestID, rec.Usage, rec.Status)
	}
	select {
	case a.changed <- struct{}{}:
	default:
	}
	if !ok {
		return 0, errors.New("unknown reservation")
	}
	return s.Cost, nil
}

func (a *stateAccountant) RecordRefused(context.Context, *Record) error { return nil }

// Records returns a copy of the settlements so far.
func (a *stateAccountant) Records() []Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.records)
}

func (a *stateAccountant) Admits() []kernel.AdmitRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.admits)
}

// waitRecords waits until n settlements happened (settles after an abort run
// in the server's stream goroutine).
func (a *stateAccountant) waitRecords(t testing.TB, n int) []Record {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		if r := a.Records(); len(r) >= n {
			return r
		}
		select {
		case <-a.changed:
		case <-deadline:
			t.Fatalf("waited for %d settlements, have %d", n, len(a.Records()))
		}
	}
}

var _ KeyLookup = (*fakeCatalog)(nil)

// KeyByID finds a key by id.
func (c *fakeCatalog) KeyByID(_ context.Context, id string) (*Principal, error) {
	for _, p := range c.keys {
		if p.KeyID == id && c.authErr == nil {
			return p, nil
		}
	}
	return nil, ErrUnauthorized
}
