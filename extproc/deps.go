package extproc

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/routing"
	"github.com/tollgate-ai/tollgate/translate"
)

// RouteHeader is the request header the processor sets to the chosen deployment
// id; Envoy's routes (and the built-in data plane) match it exactly. The
// processor always overwrites whatever the client sent. The name is defined
// once, in envoy/ (the names xDS, the data planes and the processor share).
const RouteHeader = envoy.RouteHeader

// Errors a Catalog returns; the processor maps them to client errors.
var (
	// ErrUnauthorized: unknown, expired or revoked key (401).
	ErrUnauthorized = errors.New("extproc: invalid api key")
	// ErrModelNotFound: no model group of that name (404).
	ErrModelNotFound = errors.New("extproc: model not found")
	// ErrModelNotAllowed: the key may not use that model (403).
	ErrModelNotAllowed = errors.New("extproc: model not allowed for this key")
)

// Principal is an authenticated virtual key and the scopes it is charged to.
type Principal struct {
	KeyID  string
	UserID string
	TeamID string
	OrgID  string
	// Scopes in admission order: key first, then user, team, org, global. The
	// processor appends the customer scope of the request when there is one.
	Scopes []kernel.Scope
	// KeyAlias is the key's display name (access logs); not a secret.
	KeyAlias string
	// Tags are the key's default tags, "name=value" sorted by name (tags.go).
	Tags []string
}

// ModelInfo is one entry of GET /v1/models (translate.ModelInfo: the model
// replies' shapes are the translators').
type ModelInfo = translate.ModelInfo

// Catalog is the processor's read-only view of configuration. Implementations
// serve from an in-memory snapshot: no I/O on the request path.
type Catalog interface {
	// Authenticate maps a client secret to its key; ErrUnauthorized otherwise.
	Authenticate(ctx context.Context, secret string) (*Principal, error)
	// Resolve picks a deployment of the named model group for this key:
	// ErrModelNotFound or ErrModelNotAllowed when it cannot.
	Resolve(ctx context.Context, p *Principal, model string) (*translate.Target, error)
	// Models lists the model groups the key may use.
	Models(ctx context.Context, p *Principal) []ModelInfo
	// Customer returns the scope of an end customer (from the request's `user`
	// field or the x-tollgate-customer header); ok=false when unknown, in which
	// case the request is charged without a customer scope.
	Customer(ctx context.Context, id string) (s kernel.Scope, ok bool)
}

// Record is what the processor observed of one finished request.
type Record struct {
	RequestID  string
	Principal  *Principal
	CustomerID string
	RunID      string   // the run scope's id (kernel.RunScopeID), when the request named a run
	Tags       []string // the request's tags, "name=value" sorted by name (tags.go)
	Model      string
	// RequestedModel is the name the client asked for, when it is not the
	// group's own (Model): an alias, or a name a pattern matched.
	RequestedModel string
	Deployment     string
	Usage          kernel.Usage
	Status         kernel.Status
	HTTPStatus     int
	Stream         bool
	StartedAt      time.Time
	EndedAt        time.Time
	// Unpriced: the deployment's model has no price (Target.Price.Unpriced);
	// the ledger marks the row so that its $0 is not taken for a price.
	Unpriced bool
	// Unit and Quantity: what a route charged per unit counted (images,
	// seconds, characters, searches, calls; "" for tokens), also in
	// Usage.Input at the unit's price (kernel.PerUnit).
	Unit     kernel.Unit
	Quantity int64
	// Price, when set, is the price the request is charged at instead of
	// the one it was admitted at: a pass-through reply's model's
	// (passthrough.go).
	Price *kernel.Price
	// Cache is the response cache's part: a hit and what it saved (cache.go).
	Cache CacheRecord
	// Owner, when set, is the native response id the request handed out
	// (responses.go): the Accountant records it with the ledger row.
	Owner *ResponseOwner
}

// Accountant admits and settles requests: the kernel's rules, shared counters and
// the durable ledger behind one small interface. Neither call keeps req or
// rec past its return: they are the request's pooled state (replies.go).
type Accountant interface {
	// Admit checks and reserves on every scope at once (req.ID is the request id).
	Admit(ctx context.Context, req *kernel.AdmitRequest) (kernel.Decision, error)
	// Settle charges the exact cost of a finished request, releases its
	// reservation and records it in the ledger; idempotent by RequestID.
	// It returns the cost charged.
	Settle(ctx context.Context, rec *Record) (kernel.Money, error)
	// RecordRefused writes the ledger row of a request refused before
	// admission: a guardrail's block is a $0 row with kernel.StatusRefused
	// and the deployment "guardrail:NAME", charged to no budget and released
	// from no reservation (there is none). Part of the interface, not an
	// optional one, so that a wrapping accountant cannot hide it.
	RecordRefused(ctx context.Context, rec *Record) error
}

// The translation types callers of the processor name (defined in translate,
// where the translators use them).
type (
	// API is a client-facing API (translate.API).
	API = translate.API
	// ProviderType is the wire format of a deployment's provider.
	ProviderType = translate.ProviderType
	// Target is where a request goes: one deployment of the requested model group.
	Target = translate.Target
	// RequestSigner signs an upstream request (translate.RequestSigner).
	RequestSigner = translate.RequestSigner
	// UpstreamRequest is what a RequestSigner signs.
	UpstreamRequest = translate.UpstreamRequest
)

// Client APIs and provider types (translate's).
const (
	APIChat        = translate.APIChat
	APICompletions = translate.APICompletions
	APIEmbeddings  = translate.APIEmbeddings
	APIMessages    = translate.APIMessages

	ProviderOpenAI    = translate.ProviderOpenAI
	ProviderAzure     = translate.ProviderAzure
	ProviderAnthropic = translate.ProviderAnthropic
)

// The routing types callers of the processor name (defined in routing, which
// owns deployment choice, health and cooldowns).
type (
	// Router keeps the health of deployments (routing.Router).
	Router = routing.Router
	// Group is a model group as the router sees it.
	Group = routing.Group
	// Deployment is one deployment of a group and its routing policy.
	Deployment = routing.Deployment
	// DeploymentState is a deployment's health as the Router sees it.
	DeploymentState = routing.DeploymentState
	// CooldownObserver is told when a replica cools a deployment down.
	CooldownObserver = routing.CooldownObserver
	// CooldownShare spreads cooldowns to other replicas.
	CooldownShare = routing.CooldownShare
)

// Cooldown and fallback reasons (routing's).
const (
	CooldownAllowedFails = routing.CooldownAllowedFails
	CooldownRateLimited  = routing.CooldownRateLimited
	FallbackCooldown     = routing.FallbackCooldown
)

// NewRouter returns a Router with no history (routing.NewRouter).
func NewRouter() *Router { return routing.NewRouter() }

// NewGroup prepares g for routing (routing.NewGroup).
func NewGroup(g *Group) *Group { return routing.NewGroup(g) }

// ParseStrategy reads a group's strategy name (routing.ParseStrategy).
func ParseStrategy(s string) routing.Strategy { return routing.ParseStrategy(s) }
