package store

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Errors every backend returns, so callers can test with errors.Is.
var (
	// ErrNotFound: no object of that kind and id.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: the object changed since the version the caller read (optimistic
	// concurrency), or an object with that id already exists on create.
	ErrConflict = errors.New("store: version conflict")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrQueueFull: the ledger queue is full and the context ended while waiting.
	ErrQueueFull = errors.New("store: ledger queue full")
)

// Kind names a kind of configuration object.
type Kind string

// The configuration kinds.
const (
	KindKey        Kind = "key"
	KindUser       Kind = "user"
	KindTeam       Kind = "team"
	KindOrg        Kind = "org"
	KindCustomer   Kind = "customer"
	KindProvider   Kind = "provider"
	KindDeployment Kind = "deployment"
	KindModel      Kind = "model" // a model group: public name → deployments
	KindPrice      Kind = "price"
	KindGlobal     Kind = "global" // the single global scope settings, id "global"
	KindAdmin      Kind = "admin"  // admin credentials
	KindSecret     Kind = "secret" // secrets every replica shares (not served by the admin API)
	// KindReconcile is the last scheduled reconciliation of a provider (id:
	// the provider's id; the doc is the admin API's ReconcileReport as JSON).
	KindReconcile Kind = "reconcile"
	// KindBatch is a batch admitted and not yet settled, and the batch
	// poller's lease (batch/).
	KindBatch Kind = "batch"
)

// Object is one configuration object: a JSON document of a kind, with a version
// for optimistic concurrency. Version is assigned by the store on every Put: it
// is the store-wide revision at which the object last changed.
type Object struct {
	Kind      Kind
	ID        string
	Doc       json.RawMessage
	Version   int64
	UpdatedAt time.Time
}

// Config is the configuration side of a store: versioned JSON documents by kind
// and id, and a store-wide revision that grows on every change, so that readers
// can tell when to rebuild their view.
type Config interface {
	// Get returns one object or ErrNotFound.
	Get(ctx context.Context, kind Kind, id string) (Object, error)
	// List returns objects of a kind ordered by id, starting after `after`, at most
	// limit (0 means all).
	List(ctx context.Context, kind Kind, after string, limit int) ([]Object, error)
	// Put creates or replaces an object. ifVersion is -1 to write unconditionally,
	// 0 to create only (ErrConflict if it exists), or the version last read
	// (ErrConflict if it changed). It returns the new version.
	Put(ctx context.Context, obj Object, ifVersion int64) (int64, error)
	// Delete removes an object; ErrNotFound if absent.
	Delete(ctx context.Context, kind Kind, id string) error
	// Revision is the store-wide revision: the highest version ever assigned.
	Revision(ctx context.Context) (int64, error)
	// Watch sends the revision each time it changes (coalesced: a slow reader sees
	// only the latest) until ctx ends, including changes made by other processes
	// sharing the same database, within one second.
	Watch(ctx context.Context) <-chan int64
}

// LedgerEntry is one settled request.
type LedgerEntry struct {
	RequestID  string `json:"request_id"`
	KeyID      string `json:"key_id"`
	UserID     string `json:"user_id,omitempty"`
	TeamID     string `json:"team_id,omitempty"`
	OrgID      string `json:"org_id,omitempty"`
	CustomerID string `json:"customer_id,omitempty"`
	// RunID is the run scope's id (kernel.RunScopeID) when the request named a run.
	RunID string `json:"run_id,omitempty"`
	// Tags are the request's tags, "name=value" sorted by name (kernel.ParseTags):
	// each is a scope the entry is charged to (kernel.ScopeTag).
	Tags  []string `json:"tags,omitempty"`
	Model string   `json:"model"` // public model name (the model group)
	// RequestedModel is the name the client asked for when it is not the
	// group's own (an alias or a pattern's match): what the reply named.
	RequestedModel string        `json:"requested_model,omitempty"`
	Deployment     string        `json:"deployment"` // deployment that served it
	Usage          kernel.Usage  `json:"usage"`
	Cost           kernel.Money  `json:"cost"`
	Status         kernel.Status `json:"status"`
	HTTPStatus     int           `json:"http_status"`
	Stream         bool          `json:"stream"`
	StartedAt      time.Time     `json:"started_at"`
	EndedAt        time.Time     `json:"ended_at"`
	// Unpriced: the model had no price (kernel.Price.Unpriced) and the request
	// was served all the same (estimate budget, or no budget): Cost is not a
	// price that says $0 but the absence of one.
	Unpriced bool `json:"unpriced,omitempty"`
	// Owner, when set, is a native response id the request handed out: it is
	// written in the same transaction as the row (ResponseOwners), kept when
	// the row is a repeat.
	Owner *ResponseOwner `json:"-"`
	// Unit is what the row counts when it is not tokens (kernel.Unit:
	// images, seconds, characters, searches, calls; "" for tokens) and
	// Quantity how many; the usage's Input holds the same quantity, charged
	// at the unit's price (kernel.PerUnit).
	Unit     kernel.Unit `json:"unit,omitempty"`
	Quantity int64       `json:"quantity,omitempty"`

	// Cache is what the response cache did (CacheNone: the group has no
	// cache); CacheSaved, on a hit, what the reply cost when it was stored.
	Cache      CacheResult  `json:"cache,omitempty"`
	CacheSaved kernel.Money `json:"cache_saved,omitempty"`
}

// Scopes lists the scopes an entry is charged to (global always, others when set).
func (e *LedgerEntry) Scopes() []kernel.ScopeRef {
	return e.AppendScopes(make([]kernel.ScopeRef, 0, 7+len(e.Tags)))
}

// AppendScopes appends the entry's scopes (Scopes) to refs: into a caller's
// array, no allocation per entry (the ledger writer's totals).
func (e *LedgerEntry) AppendScopes(refs []kernel.ScopeRef) []kernel.ScopeRef {
	refs = append(refs, kernel.ScopeRef{Kind: kernel.ScopeGlobal})
	for _, s := range [...]struct {
		kind kernel.ScopeKind
		id   string
	}{
		{kernel.ScopeOrg, e.OrgID},
		{kernel.ScopeTeam, e.TeamID},
		{kernel.ScopeUser, e.UserID},
		{kernel.ScopeCustomer, e.CustomerID},
		{kernel.ScopeKey, e.KeyID},
		{kernel.ScopeRun, e.RunID},
	} {
		if s.id != "" {
			refs = append(refs, kernel.ScopeRef{Kind: s.kind, ID: s.id})
		}
	}
	for _, t := range e.Tags {
		refs = append(refs, kernel.ScopeRef{Kind: kernel.ScopeTag, ID: t})
	}
	return refs
}

// Ledger is the durable, append-only record of settled requests, with spend
// totals per scope kept in hourly buckets (UTC) in the same transaction.
type Ledger interface {
	// Append queues entries for the group-commit writer. It returns once queued;
	// when the bounded queue is full it waits (backpressure) until ctx ends
	// (ErrQueueFull). Appending a request id twice records it once.
	Append(ctx context.Context, entries ...LedgerEntry) error
	// Flush returns once everything appended before the call is durable.
	Flush(ctx context.Context) error
}

// LedgerFilter selects ledger rows. Empty fields match everything.
type LedgerFilter struct {
	Scope *kernel.ScopeRef
	Model string
	Since time.Time // inclusive, on EndedAt
	Until time.Time // exclusive, on EndedAt; zero means no bound
	After string    // pagination: request id of the last row of the previous page
	Limit int       // 0 means 100
}

// SpendPoint is the spend of one scope in one bucket.
type SpendPoint struct {
	Start    time.Time    `json:"start"`
	Cost     kernel.Money `json:"cost"`
	Requests int64        `json:"requests"`
	Tokens   int64        `json:"tokens"`

	// Cache: the cache's hits, misses and savings (cache_ledger.go).
	Cache CacheCounts `json:"cache"`
}

// Spend reads what the ledger recorded.
type Spend interface {
	// ScopeSpend is the total cost charged to a scope for requests that ended in
	// [since, until) (zero until: no upper bound), at hourly resolution: exact for
	// windows that start and end on an hour.
	ScopeSpend(ctx context.Context, scope kernel.ScopeRef, since, until time.Time) (kernel.Money, error)
	// Series is the spend of a scope per bucket of `step` (a multiple of an hour),
	// over [since, until), buckets aligned to `since`.
	Series(ctx context.Context, scope kernel.ScopeRef, since, until time.Time, step time.Duration) ([]SpendPoint, error)
	// Entries lists ledger rows ordered by (EndedAt, RequestID) ascending.
	Entries(ctx context.Context, f LedgerFilter) ([]LedgerEntry, error)
}

// HourRange is the hourly spend buckets [lo, hi) (Unix seconds of their UTC
// starts) that overlap [since, until): exact when both are on an hour;
// otherwise partial hours count whole, the conservative side for budgets. Zero
// since means no lower bound, zero until no upper bound. Backends that keep
// hourly totals answer ScopeSpend and Series from these buckets.
func HourRange(since, until time.Time) (lo, hi int64) {
	lo = since.UTC().Truncate(time.Hour).Unix()
	if since.IsZero() {
		lo = math.MinInt64
	}
	hi = math.MaxInt64
	if !until.IsZero() {
		h := until.UTC().Truncate(time.Hour)
		if !h.Equal(until) {
			h = h.Add(time.Hour)
		}
		hi = h.Unix()
	}
	return lo, hi
}

// SeriesBuckets fills the answer of Spend.Series from hourly totals: the
// buckets of step over [since, until), aligned to since, every one present.
type SeriesBuckets struct {
	points     []SpendPoint
	base, step int64 // Unix seconds
}

// NewSeriesBuckets returns the empty buckets of step (a positive multiple of an
// hour) over [since, until), until after since.
func NewSeriesBuckets(since, until time.Time, step time.Duration) *SeriesBuckets {
	n := int((until.Sub(since) + step - 1) / step)
	b := &SeriesBuckets{points: make([]SpendPoint, n), base: since.Unix(), step: int64(step / time.Second)}
	for i := range b.points {
		b.points[i].Start = since.Add(time.Duration(i) * step).UTC()
	}
	return b
}

// Add adds t, the total of the hour starting at hour (Unix seconds; its
// Start is not read), to the bucket holding it; an hour that starts before
// since or at until (a partial hour counted whole, see HourRange) goes to
// the first or the last bucket.
func (b *SeriesBuckets) Add(hour int64, t SpendPoint) {
	p := &b.points[min(max((hour-b.base)/b.step, 0), int64(len(b.points)-1))]
	p.Cost += t.Cost
	p.Requests += t.Requests
	p.Tokens += t.Tokens
	p.Cache.Add(t.Cache)
}

// Points are the buckets, oldest first.
func (b *SeriesBuckets) Points() []SpendPoint { return b.points }

// AuditEntry records one admin change.
type AuditEntry struct {
	ID     int64     `json:"id"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`
	Action string    `json:"action"` // e.g. "key.create"
	Kind   Kind      `json:"kind"`
	Target string    `json:"target"`
	Detail string    `json:"detail,omitempty"` // JSON, secrets removed
}

// Audit is the admin change log.
type Audit interface {
	AppendAudit(ctx context.Context, e AuditEntry) error
	// ListAudit returns entries with ID > afterID, oldest first, at most limit (0: 100).
	ListAudit(ctx context.Context, afterID int64, limit int) ([]AuditEntry, error)
}

// Store is a whole backend: configuration, ledger, spend and audit.
type Store interface {
	Config
	Ledger
	Spend
	Audit
	// Close flushes the ledger and releases the backend.
	Close(ctx context.Context) error
}

// SpendByScope reads the spend of every scope of one kind at once. Every
// backend implements it; it is not part of Spend so that narrow users depend
// on it alone.
type SpendByScope interface {
	// SeriesByScope is the spend of every scope of kind (not ScopeGlobal) that
	// spent in [since, until), per bucket of step (a multiple of an hour),
	// buckets aligned to since: one query over the hourly totals, by scope id.
	SeriesByScope(ctx context.Context, kind kernel.ScopeKind, since, until time.Time, step time.Duration) (map[string][]SpendPoint, error)
}
