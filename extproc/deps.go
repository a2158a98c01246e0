package extproc

import (
	"context"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/kernel"
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
}

// ProviderType is the wire format of a deployment's provider.
type ProviderType string

// Provider types (the same strings as the store's).
const (
	ProviderOpenAI    ProviderType = "openai"
	ProviderAzure     ProviderType = "azure"
	ProviderAnthropic ProviderType = "anthropic"
)

// Target is where a request goes: one deployment of the requested model group.
type Target struct {
	Model         string // public model name the client used
	Deployment    string // deployment id: the RouteHeader value
	Provider      ProviderType
	BasePath      string // path prefix of the provider's base URL, e.g. "/v1" ("" for none)
	Host          string // provider host, e.g. "api.openai.com" (informational; Envoy rewrites it)
	APIKey        string // decrypted provider credential; never logged or returned
	APIVersion    string // Azure api-version or anthropic-version
	ProviderModel string // model name upstream (Azure: deployment name)
	Price         kernel.Price
	// DefaultMaxTokens bounds the output when the client gives no max_tokens.
	DefaultMaxTokens int64
	// NativeResponses: the upstream serves OpenAI's Responses API itself
	// (OpenAI-compatible providers that declare it); otherwise the gateway
	// translates Responses requests to chat completions.
	NativeResponses bool
	// Signer, when set, signs each upstream request once its body is final
	// (bedrock: AWS SigV4); see signer.go.
	Signer RequestSigner `json:"-"`
}

// ModelInfo is one entry of GET /v1/models.
type ModelInfo struct {
	ID      string
	OwnedBy string
	Created time.Time
}

// Catalog is the processor's read-only view of configuration. Implementations
// serve from an in-memory snapshot: no I/O on the request path.
type Catalog interface {
	// Authenticate maps a client secret to its key; ErrUnauthorized otherwise.
	Authenticate(ctx context.Context, secret string) (*Principal, error)
	// Resolve picks a deployment of the named model group for this key:
	// ErrModelNotFound or ErrModelNotAllowed when it cannot.
	Resolve(ctx context.Context, p *Principal, model string) (*Target, error)
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
	Model      string
	Deployment string
	Usage      kernel.Usage
	Status     kernel.Status
	HTTPStatus int
	Stream     bool
	StartedAt  time.Time
	EndedAt    time.Time
	// Cache is the response cache's part: a hit and what it saved (cache.go).
	Cache CacheRecord
}

// Accountant admits and settles requests: the kernel's rules, shared counters and
// the durable ledger behind one small interface. Neither call keeps req or
// rec past its return: they are the request's pooled state (stream_pool.go).
type Accountant interface {
	// Admit checks and reserves on every scope at once (req.ID is the request id).
	Admit(ctx context.Context, req *kernel.AdmitRequest) (kernel.Decision, error)
	// Settle charges the exact cost of a finished request, releases its
	// reservation and records it in the ledger; idempotent by RequestID.
	// It returns the cost charged.
	Settle(ctx context.Context, rec *Record) (kernel.Money, error)
}
