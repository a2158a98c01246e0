package kernel

import (
	"time"
)

// Money is an amount of US dollars in nano-dollars (1e-9 USD). It is exact: all
// accounting is integer arithmetic. An int64 holds ±9.2 billion dollars.
type Money int64

// Units of Money.
const (
	NanoUSD  Money = 1
	MicroUSD Money = 1_000
	Cent     Money = 10_000_000
	Dollar   Money = 1_000_000_000
)

// Price is what one model costs, in nano-dollars per million tokens, for each kind
// of token. A zero CachedInput or CacheWrite price means "same as Input"; a zero
// Reasoning price means "same as Output".
type Price struct {
	Input       Money `json:"input"`
	CachedInput Money `json:"cached_input,omitempty"`
	CacheWrite  Money `json:"cache_write,omitempty"`
	Output      Money `json:"output"`
	Reasoning   Money `json:"reasoning,omitempty"`
	// Unpriced marks the price of a model nobody priced: it is in no price
	// table and its deployment is not declared free. Its cost is zero all the
	// same; Admit refuses it under a strict budget (UnpricedRefusal) and the
	// ledger marks what it served. Stored prices never carry it.
	Unpriced bool `json:"unpriced,omitempty"`
	// Units are the prices of the model's non-token units (images, seconds
	// of audio, characters, search units; units.go); nil when it has none.
	Units *UnitPrices `json:"units,omitempty"`
}

// Usage counts the tokens of one request by kind. The kinds are disjoint:
// Input excludes cached and cache-write tokens, Output excludes reasoning tokens.
// Translators normalise each provider's usage into this shape.
type Usage struct {
	Input       int64 `json:"input"`
	CachedInput int64 `json:"cached_input,omitempty"`
	CacheWrite  int64 `json:"cache_write,omitempty"`
	Output      int64 `json:"output"`
	Reasoning   int64 `json:"reasoning,omitempty"`
}

// Total is every token the request consumed.
func (u Usage) Total() int64 {
	return u.Input + u.CachedInput + u.CacheWrite + u.Output + u.Reasoning
}

// ScopeKind is a level of the accounting hierarchy.
type ScopeKind uint8

// The scope kinds, from the widest to the narrowest.
const (
	ScopeGlobal ScopeKind = iota
	ScopeOrg
	ScopeTeam
	ScopeUser
	ScopeCustomer
	ScopeKey
	// ScopeDeployment is a provider deployment's own quota (rpm/tpm), which
	// the router adds to a request's scopes; it is outside the hierarchy and
	// carries no budget.
	ScopeDeployment
	// ScopeRun is one run of an agent (a request's x-tollgate-run-id, under
	// the key or team whose RunPolicy applies): the narrowest level, with a
	// budget of its own for the run's whole life. Its ID is the owner's
	// ScopeRef and the run id, "key:k1/run-42" (RunScopeID).
	ScopeRun
	// ScopeTag is one tag of a request (x-tollgate-tags, a key's default
	// tags): its ID is "name=value" (TagScopeID). Every tag is counted in
	// the ledger; a request is admitted against a tag's scope only when the
	// tag has a budget (tags.go).
	ScopeTag
)

// RunScopeID is the ID of the ScopeRun of run id under owner.
func RunScopeID(owner ScopeRef, run string) string { return owner.String() + "/" + run }

// RunPolicy is what a key or team gives each of its runs: a budget over the
// run's life, a request rate, and how long an idle run's counters are kept.
type RunPolicy struct {
	Budget Money         `json:"budget,omitempty"` // 0: no budget
	RPM    int64         `json:"rpm,omitempty"`
	TTL    time.Duration `json:"ttl,omitempty"` // 0: DefaultRunTTL
}

// DefaultRunTTL is how long an idle run's counters are kept when its policy
// names no TTL.
const DefaultRunTTL = time.Hour

// Limits of the run scope the policy gives: a total budget, the rpm and the TTL.
func (p *RunPolicy) Limits() *Limits {
	l := &Limits{RPM: p.RPM, TTL: p.TTL}
	if l.TTL <= 0 {
		l.TTL = DefaultRunTTL
	}
	if p.Budget > 0 {
		l.Budgets = []BudgetWindow{{Limit: p.Budget, Period: Period{Kind: PeriodTotal}}}
	}
	return l
}

// ScopeRef names one scope: a kind and an id ("" for ScopeGlobal).
type ScopeRef struct {
	Kind ScopeKind `json:"kind"`
	ID   string    `json:"id"`
}

// PeriodKind says how a budget window resets.
type PeriodKind uint8

// Period kinds.
const (
	// PeriodTotal never resets.
	PeriodTotal PeriodKind = iota
	// PeriodDaily resets at midnight in Period.Location.
	PeriodDaily
	// PeriodWeekly resets at Monday midnight in Period.Location.
	PeriodWeekly
	// PeriodMonthly resets at midnight on the first of the month in Period.Location.
	PeriodMonthly
	// PeriodRolling resets every Period.Every, counted from Period.Anchor.
	PeriodRolling
)

// Period is the reset rule of one budget window.
type Period struct {
	Kind     PeriodKind     `json:"kind"`
	Every    time.Duration  `json:"every,omitempty"` // PeriodRolling only
	Anchor   time.Time      `json:"anchor,omitzero"` // PeriodRolling only
	Location *time.Location `json:"-"`               // calendar periods; nil means UTC
}

// BudgetWindow is a spending limit over one period. A Soft window never
// refuses nor clamps a request: its counters are kept as for any other
// window, and an admission while its spent has reached Limit carries a
// BudgetWarning (the processor's x-tollgate-budget-warning header, and alerts).
type BudgetWindow struct {
	Limit  Money  `json:"limit"`
	Period Period `json:"period"`
	Soft   bool   `json:"soft,omitempty"`
}

// BudgetWarning names a soft budget window whose spent had reached its limit
// when a request was admitted.
type BudgetWarning struct {
	Scope  ScopeRef
	Period Period
	Limit  Money
	Spent  Money
}

// BudgetMode says how hard a budget is.
type BudgetMode uint8

// Budget modes.
const (
	// Strict reserves the worst-case cost at admission: spent+reserved never passes a limit.
	Strict BudgetMode = iota
	// Estimate admits while spent is under the limit and charges the exact cost afterwards;
	// the last requests of a window may overshoot by their own cost.
	Estimate
)

// Shortfall says what strict admission does when the budget cannot cover the
// requested max_tokens.
type Shortfall uint8

// Shortfall policies.
const (
	// Clamp lowers max_tokens to what the budget affords (at least 1 output token).
	Clamp Shortfall = iota
	// Reject refuses the request.
	Reject
)

// Limits are everything one scope may carry. Zero values mean "no limit".
type Limits struct {
	Budgets     []BudgetWindow `json:"budgets,omitempty"`
	RPM         int64          `json:"rpm,omitempty"`
	TPM         int64          `json:"tpm,omitempty"`
	MaxParallel int64          `json:"max_parallel,omitempty"`
	Models      []string       `json:"models,omitempty"` // allowed public model names; empty allows all
	ExpiresAt   time.Time      `json:"expires_at,omitzero"`
	Mode        BudgetMode     `json:"mode,omitempty"`
	Shortfall   Shortfall      `json:"shortfall,omitempty"`
	// TTL > 0: the scope's counters are forgotten once nothing is in flight
	// on it and no admission or settlement has touched it for TTL (run scopes; Expire
	// drops them). Its spend is in the ledger, which seeds it again.
	TTL time.Duration `json:"ttl,omitempty"`
	// Run is the policy of the runs of this scope (keys and teams): a
	// request naming a run id is also admitted against the run's scope.
	Run *RunPolicy `json:"run,omitempty"`
}

// Scope is one scope of a request with its limits. Limits may be nil (no limits,
// only counted).
type Scope struct {
	Ref    ScopeRef
	Limits *Limits
}

// AdmitRequest is everything admission needs to know about one request.
type AdmitRequest struct {
	// ID identifies the reservation; Settle takes it. Unique per request.
	ID string
	// Scopes that apply, all checked and reserved at once. Scopes[0] is the key;
	// its Limits carry the budget mode and shortfall policy for the request.
	Scopes []Scope
	// Model is the public model name the client asked for (checked against Limits.Models).
	Model string
	// PromptBytes bounds the input tokens in strict mode (every token covers ≥ 1 byte).
	PromptBytes int64
	// MaxTokens the client asked for; 0 when absent.
	MaxTokens int64
	// DefaultMaxTokens bounds the output when MaxTokens is 0.
	DefaultMaxTokens int64
	// Price of the deployment chosen for the request.
	Price Price
	// Lease is how long the reservation lives unsettled; 0 means DefaultLease.
	Lease time.Duration
}

// DefaultLease is the lease of a reservation when AdmitRequest.Lease is zero.
const DefaultLease = 15 * time.Minute

// Reason says why admission decided as it did.
type Reason uint8

// Reasons.
const (
	ReasonOK Reason = iota
	ReasonKeyExpired
	ReasonModelNotAllowed
	ReasonRequestLimit  // rpm
	ReasonTokenLimit    // tpm
	ReasonParallelLimit // max parallel requests
	ReasonBudgetExceeded
	ReasonDuplicate // a reservation with this ID exists
	ReasonUnpriced  // the model has no price and a strict budget applies
)

// RateLimitInfo carries the values for the x-ratelimit-* headers, from the
// tightest scope with such a limit. Zero Limit means no such limit applies.
type RateLimitInfo struct {
	LimitRequests     int64
	RemainingRequests int64
	ResetRequests     time.Duration
	LimitTokens       int64
	RemainingTokens   int64
	ResetTokens       time.Duration
}

// Decision is the result of Admit.
type Decision struct {
	Admitted bool
	Reason   Reason
	// Scope is the scope that refused the request (when not admitted).
	Scope ScopeRef
	// RetryAfter is when the refused request may succeed (rate limits, parallel);
	// zero when waiting will not help (budget, model).
	RetryAfter time.Duration
	// MaxTokens is the output bound reserved for. When Clamped, the processor must
	// send this max_tokens upstream instead of the client's.
	MaxTokens int64
	Clamped   bool
	// Reserved is the worst-case cost held on every budget scope.
	Reserved  Money
	RateLimit RateLimitInfo
	// Warnings are the soft budget windows past their limit, in scope and
	// budget order (admitted requests only; nil when none).
	Warnings []BudgetWarning
}

// Status is how a request ended.
type Status uint8

// Statuses.
const (
	StatusCompleted Status = iota // the response finished normally
	StatusAborted                 // client disconnect, upstream reset, stream cancelled
	StatusFailed                  // upstream error response; usage may be zero
	StatusExpired                 // never settled; settled by Expire after its lease
	// StatusRefused: refused before admission by a guardrail (extproc
	// guardPre): a $0 row that no budget or counter saw.
	StatusRefused
)

// Settlement is the result of settling one reservation.
type Settlement struct {
	ID         string
	Scopes     []ScopeRef
	Model      string
	Usage      Usage
	Cost       Money
	Reserved   Money
	Status     Status
	AdmittedAt time.Time
	SettledAt  time.Time
	// Unpriced: the reservation's price was Price.Unpriced (its Cost is no
	// price's $0); the ledger marks the row, expired ones included.
	Unpriced bool
}
