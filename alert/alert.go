package alert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Kind is what an alert is about.
type Kind string

// Kinds of alerts.
const (
	KindBudget   Kind = "budget_threshold" // a budget window's spend reached a threshold
	KindExpiring Kind = "key_expiring"     // a key expires soon
	KindAnomaly  Kind = "spend_anomaly"    // an hour's spend above N× the trailing average
)

// Event is one alert. ID is the same on every replica that sees the same
// condition: it is what fires once.
type Event struct {
	ID          string          `json:"id"`
	Kind        Kind            `json:"kind"`
	Scope       kernel.ScopeRef `json:"scope"`
	Period      string          `json:"period,omitempty"`       // budget alerts: the budget's period
	WindowStart time.Time       `json:"window_start,omitzero"`  // budget alerts: the window's start
	Threshold   int             `json:"threshold_pct,omitzero"` // budget alerts: the percent reached
	Soft        bool            `json:"soft,omitempty"`         // budget alerts: a soft budget
	Limit       kernel.Money    `json:"limit_nano_usd,omitzero"`
	Spent       kernel.Money    `json:"spent_nano_usd,omitzero"`
	ExpiresAt   time.Time       `json:"expires_at,omitzero"` // key_expiring
	Baseline    kernel.Money    `json:"baseline_nano_usd,omitzero"`
	At          time.Time       `json:"at"`
	Message     string          `json:"message"`
	// until is how long the claim of ID must be kept (the window's end).
	until time.Time
}

// Sink delivers an event somewhere; Send returns once it is delivered or
// has given up.
type Sink interface {
	Name() string
	Send(ctx context.Context, e Event) (attempts int, err error)
}

// Claimer decides which replica fires an event: Claim returns true exactly
// once per key until ttl.
type Claimer interface {
	Claim(ctx context.Context, key string, ttl time.Duration) (bool, error)
}

// RedisClaimer claims with SET NX PX, shared by every replica.
type RedisClaimer struct {
	Client goredis.UniversalClient
	Prefix string // e.g. "tg"; keys are "{prefix}:alert:<id>"
}

// Claim implements Claimer.
func (c RedisClaimer) Claim(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := c.Client.SetNX(ctx, "{"+c.Prefix+"}:alert:"+key, "1", max(ttl, time.Second)).Result()
	if err != nil {
		return false, fmt.Errorf("alert: claim %s: %w", key, err)
	}
	return ok, nil
}

// MemoryClaimer claims in this process (one replica).
type MemoryClaimer struct {
	mu   sync.Mutex
	seen map[string]time.Time
	Now  func() time.Time
}

// Claim implements Claimer.
func (c *MemoryClaimer) Claim(_ context.Context, key string, ttl time.Duration) (bool, error) {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]time.Time{}
	}
	if until, ok := c.seen[key]; ok && now().Before(until) {
		return false, nil
	}
	c.seen[key] = now().Add(ttl)
	return true, nil
}

// Delivery is the state of one event's delivery to one sink.
type Delivery struct {
	EventID  string    `json:"event_id"`
	Sink     string    `json:"sink"`
	Attempts int       `json:"attempts"`
	OK       bool      `json:"ok"`
	Error    string    `json:"error,omitempty"`
	At       time.Time `json:"at"`
}

// Observer counts what a Notifier does.
type Observer interface {
	// AlertFired: this replica fired an event of kind (it won the claim).
	AlertFired(kind string)
	// AlertDelivered: an event of kind was delivered to sink, or not.
	AlertDelivered(sink, kind string, ok bool)
}

// Notifier fires events: once across replicas (its Journal, else its
// Claimer), to every sink, into the audit log.
type Notifier struct {
	Claimer Claimer
	// Journal, when set, claims each event instead of Claimer (a row whose
	// key is the event's id: at most once across every replica sharing the
	// store) and keeps its deliveries, which the admin API lists.
	Journal store.Alerts
	Sinks   []Sink
	// SinksFrom, when set, returns more sinks at each event (the store's,
	// managed through the admin API); an error is reported and the event
	// still goes to the sinks known.
	SinksFrom func(ctx context.Context) ([]Sink, error)
	Audit     store.Audit // nil: no audit entries
	Log       *slog.Logger
	Now       func() time.Time
	// Observer, when set, counts the events fired and their deliveries
	// (the gateway's metrics).
	Observer Observer

	mu         sync.Mutex
	deliveries []Delivery
}

// maxDeliveries bounds the delivery states kept.
const maxDeliveries = 1000

// Fire sends e unless another call (on this replica or another) already
// claimed its ID; it reports whether this call sent it. A claim that fails
// (Redis down) does not fire: an alert is never sent twice.
func (n *Notifier) Fire(ctx context.Context, e Event) (bool, error) {
	ttl := 24 * time.Hour
	if !e.until.IsZero() {
		ttl = max(e.until.Sub(n.now())+time.Hour, time.Hour)
	}
	if e.At.IsZero() {
		e.At = n.now()
	}
	detail, _ := json.Marshal(e)
	ok, err := n.claim(ctx, e, string(detail), ttl)
	if err != nil || !ok {
		return false, err
	}
	if n.Observer != nil {
		n.Observer.AlertFired(string(e.Kind))
	}
	var errs []error
	sinks := n.Sinks
	if n.SinksFrom != nil {
		more, err := n.SinksFrom(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("alert: sinks of %s: %w", e.ID, err))
		}
		sinks = append(slices.Clip(sinks), more...)
	}
	if n.Audit != nil {
		err := n.Audit.AppendAudit(ctx, store.AuditEntry{
			At: e.At, Actor: "tollgate", Action: "alert." + string(e.Kind), Kind: auditKind(e.Scope.Kind),
			Target: e.Scope.String(), Detail: string(detail),
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("alert: audit %s: %w", e.ID, err))
		}
	}
	for _, s := range sinks {
		attempts, err := s.Send(ctx, e)
		d := Delivery{EventID: e.ID, Sink: s.Name(), Attempts: attempts, OK: err == nil, At: n.now()}
		if err != nil {
			d.Error = err.Error()
			errs = append(errs, err)
			if n.Log != nil {
				n.Log.Warn("alert not delivered", "event", e.ID, "sink", s.Name(), "attempts", attempts, "err", err)
			}
		}
		if n.Observer != nil {
			n.Observer.AlertDelivered(d.Sink, string(e.Kind), d.OK)
		}
		if n.Journal != nil {
			err := n.Journal.RecordAlertDelivery(ctx, store.AlertDelivery{
				AlertID: d.EventID, Sink: d.Sink, Attempts: d.Attempts, OK: d.OK, Error: d.Error, At: d.At,
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("alert: record delivery of %s: %w", e.ID, err))
			}
		}
		n.mu.Lock()
		n.deliveries = append(n.deliveries, d)
		if len(n.deliveries) > maxDeliveries {
			n.deliveries = n.deliveries[len(n.deliveries)-maxDeliveries:]
		}
		n.mu.Unlock()
	}
	return true, errors.Join(errs...)
}

// claim decides whether this call fires e: through the Journal when set
// (the store every replica shares), else the Claimer.
func (n *Notifier) claim(ctx context.Context, e Event, detail string, ttl time.Duration) (bool, error) {
	if n.Journal == nil {
		return n.Claimer.Claim(ctx, e.ID, ttl)
	}
	ok, err := n.Journal.ClaimAlert(ctx, store.AlertRecord{
		ID: e.ID, Kind: string(e.Kind), Scope: e.Scope, Message: e.Message, Detail: detail, FiredAt: e.At,
	})
	if err != nil {
		return false, fmt.Errorf("alert: claim %s: %w", e.ID, err)
	}
	return ok, nil
}

// Deliveries returns the delivery states kept, oldest first.
func (n *Notifier) Deliveries() []Delivery {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Delivery(nil), n.deliveries...)
}

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

func auditKind(k kernel.ScopeKind) store.Kind {
	switch k {
	case kernel.ScopeKey:
		return store.KindKey
	case kernel.ScopeUser:
		return store.KindUser
	case kernel.ScopeTeam:
		return store.KindTeam
	case kernel.ScopeOrg:
		return store.KindOrg
	case kernel.ScopeCustomer:
		return store.KindCustomer
	case kernel.ScopeTag:
		return store.KindTag
	default:
		return store.KindGlobal
	}
}
