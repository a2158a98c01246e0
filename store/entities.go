package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Entity is a typed configuration object stored as a JSON document.
type Entity interface {
	Key | User | Team | Org | Customer | Provider | Deployment | ModelGroup | ModelPrice | Global | Admin | MCPServer |
		Guardrail | GuardrailAttachment | // guardrails.go
		TagBudget | // tags.go
		AlertSink | AlertSettings // alerts.go
}

// KeyHash is the stored form of a key secret: hex SHA-256 of the secret.
type KeyHash struct {
	Hash       string    `json:"hash"`
	ValidUntil time.Time `json:"valid_until,omitzero"` // set on the old secret during rotation
}

// Key is a virtual key. Only hashes of its secrets are stored.
type Key struct {
	ID        string            `json:"id"`
	Alias     string            `json:"alias,omitempty"`
	Prefix    string            `json:"prefix"` // first characters of the secret, for display
	Hashes    []KeyHash         `json:"hashes"`
	UserID    string            `json:"user_id,omitempty"`
	TeamID    string            `json:"team_id,omitempty"`
	OrgID     string            `json:"org_id,omitempty"`
	Limits    kernel.Limits     `json:"limits"`
	MCPTools  []string          `json:"mcp_tools,omitempty"` // see MCPServer
	Metadata  map[string]string `json:"metadata,omitempty"`
	Revoked   bool              `json:"revoked,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	RevokedAt time.Time         `json:"revoked_at,omitzero"`
	// Passthrough grants pass-through routes (/passthrough/PROVIDER_ID/…):
	// "PROVIDER_ID:PATH_GLOB" each, path.Match globs where "*" also matches
	// the rest of the path when it ends the pattern; none: denied (#34).
	Passthrough []string `json:"passthrough,omitempty"`
	// Tags are the key's default tags (name → value): every request of the
	// key carries them, a request's own tag of the same name wins (tags.go).
	Tags map[string]string `json:"tags,omitempty"`
}

// User is a person owning keys.
type User struct {
	ID     string        `json:"id"`
	Email  string        `json:"email,omitempty"`
	OrgID  string        `json:"org_id,omitempty"`
	Teams  []string      `json:"teams,omitempty"`
	Limits kernel.Limits `json:"limits"`
	// MCPTools narrows the MCP tools of the user's keys (see MCPServer).
	MCPTools []string `json:"mcp_tools,omitempty"`
}

// Team groups users and keys.
type Team struct {
	ID      string        `json:"id"`
	Name    string        `json:"name,omitempty"`
	OrgID   string        `json:"org_id,omitempty"`
	Members []string      `json:"members,omitempty"` // user ids
	Limits  kernel.Limits `json:"limits"`
	// MCPTools narrows the MCP tools of the team's keys (see MCPServer).
	MCPTools []string `json:"mcp_tools,omitempty"`
	// Passthrough grants every key of the team pass-through routes, as
	// Key.Passthrough.
	Passthrough []string `json:"passthrough,omitempty"`
}

// Org groups teams.
type Org struct {
	ID     string        `json:"id"`
	Name   string        `json:"name,omitempty"`
	Limits kernel.Limits `json:"limits"`
	// MCPTools narrows the MCP tools of the org's keys (see MCPServer).
	MCPTools []string `json:"mcp_tools,omitempty"`
}

// Customer is an end customer of an application, named by the request's `user`
// field or the x-tollgate-customer header.
type Customer struct {
	ID     string        `json:"id"`
	Name   string        `json:"name,omitempty"`
	Limits kernel.Limits `json:"limits"`
}

// ProviderType is the wire format a provider speaks.
type ProviderType string

// Provider types.
const (
	ProviderOpenAI    ProviderType = "openai"    // OpenAI and any OpenAI-compatible server
	ProviderAzure     ProviderType = "azure"     // Azure OpenAI
	ProviderAnthropic ProviderType = "anthropic" // Anthropic Messages API
	ProviderGemini    ProviderType = "gemini"    // Google Gemini API (AI Studio)
	ProviderBedrock   ProviderType = "bedrock"   // Amazon Bedrock runtime (Converse, InvokeModel)
	ProviderVertex    ProviderType = "vertex"    // Google Cloud Vertex AI (Gemini and Claude models)
)

// Provider is an upstream API account.
type Provider struct {
	ID      string       `json:"id"`
	Type    ProviderType `json:"type"`
	BaseURL string       `json:"base_url"` // e.g. https://api.openai.com/v1
	// Credential is the provider API key, encrypted at rest by the admin layer
	// (AES-GCM); the store keeps it opaque.
	Credential []byte `json:"credential,omitempty"`
	// APIVersion is Azure's api-version or Anthropic's anthropic-version.
	APIVersion string `json:"api_version,omitempty"`
	// ResponsesAPI: the upstream serves OpenAI's Responses API itself.
	ResponsesAPI bool `json:"responses_api,omitempty"`
	// AdminCredential is the provider's admin key for its usage and cost
	// reports (reconcile/), sealed like Credential.
	AdminCredential []byte `json:"admin_credential,omitempty"`
	// PricePerCall is charged for each pass-through call whose usage cannot
	// be read or whose model has no price (#34); 0: such calls are unpriced
	// (refused under strict budgets, marked in the ledger otherwise).
	PricePerCall kernel.Money `json:"price_per_call,omitempty"`
}

// Deployment is one provider model that can serve a model group.
type Deployment struct {
	ID            string `json:"id"`
	Provider      string `json:"provider"`
	ProviderModel string `json:"provider_model"` // model name (Azure: deployment name) upstream
	Weight        int    `json:"weight,omitempty"`
	RPM           int64  `json:"rpm,omitempty"`
	TPM           int64  `json:"tpm,omitempty"`
	// BaseModel is the model the provider runs under ProviderModel, for
	// pricing when ProviderModel is a name of the operator's own (an Azure
	// deployment name, a fine-tune); "" prices ProviderModel itself.
	BaseModel string `json:"base_model,omitempty"`
	// Free declares the deployment free of charge (a local or prepaid
	// model): its requests cost $0 by the operator's word, never refused or
	// marked as unpriced.
	Free bool `json:"free,omitempty"`
	DeploymentPolicy
}

// ModelGroup is a public model name and the deployments that serve it.
type ModelGroup struct {
	ID               string   `json:"id"` // the public model name
	Deployments      []string `json:"deployments"`
	DefaultMaxTokens int64    `json:"default_max_tokens,omitempty"`
	// Aliases are other names of the group clients may ask for.
	Aliases []string `json:"aliases,omitempty"`
	// UpstreamModelFromRequest sends the name the client asked for (through
	// an alias or pattern) to the provider as the model, priced under that
	// name: one group serves every model of a provider.
	UpstreamModelFromRequest bool `json:"upstream_model_from_request,omitempty"`
	GroupRouting
	// Cache is the group's response cache (nil: none; store/cache.go).
	Cache *ModelCache `json:"cache,omitempty"`
}

// ModelPrice is the price of a model (by public model name or provider model name).
type ModelPrice struct {
	ID    string       `json:"id"`
	Price kernel.Price `json:"price"`
}

// Global is the settings of the global scope (id "global").
type Global struct {
	ID     string        `json:"id"`
	Limits kernel.Limits `json:"limits"`
}

// Role is what an admin credential may do.
type Role string

// Roles.
const (
	RoleAdmin     Role = "admin"
	RoleTeamAdmin Role = "team-admin"
	RoleViewer    Role = "viewer"
)

// Admin is an admin API credential.
type Admin struct {
	ID        string    `json:"id"`
	Hash      string    `json:"hash"` // hex SHA-256 of the secret
	Role      Role      `json:"role"`
	TeamID    string    `json:"team_id,omitempty"` // team-admin only
	CreatedAt time.Time `json:"created_at"`
}

// KindOf returns the Kind of an entity type.
func KindOf[T Entity]() Kind {
	var zero T
	switch any(zero).(type) {
	case Key:
		return KindKey
	case User:
		return KindUser
	case Team:
		return KindTeam
	case Org:
		return KindOrg
	case Customer:
		return KindCustomer
	case Provider:
		return KindProvider
	case Deployment:
		return KindDeployment
	case ModelGroup:
		return KindModel
	case ModelPrice:
		return KindPrice
	case Global:
		return KindGlobal
	case MCPServer:
		return KindMCPServer
	case Guardrail:
		return KindGuardrail
	case GuardrailAttachment:
		return KindGuardrailAttachment
	case TagBudget:
		return KindTag
	case AlertSink:
		return KindAlertSink
	case AlertSettings:
		return KindAlertSettings
	default:
		return KindAdmin
	}
}

// Get reads one typed entity and its version.
func Get[T Entity](ctx context.Context, c Config, id string) (T, int64, error) {
	var v T
	obj, err := c.Get(ctx, KindOf[T](), id)
	if err != nil {
		return v, 0, err
	}
	if err := json.Unmarshal(obj.Doc, &v); err != nil {
		return v, 0, fmt.Errorf("store: decode %s %q: %w", obj.Kind, id, err)
	}
	return v, obj.Version, nil
}

// Put writes one typed entity (see Config.Put for ifVersion).
func Put[T Entity](ctx context.Context, c Config, id string, v *T, ifVersion int64) (int64, error) {
	doc, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("store: encode %s %q: %w", KindOf[T](), id, err)
	}
	return c.Put(ctx, Object{Kind: KindOf[T](), ID: id, Doc: doc}, ifVersion)
}

// List reads every entity of a kind, ordered by id.
func List[T Entity](ctx context.Context, c Config) ([]T, error) {
	objs, err := c.List(ctx, KindOf[T](), "", 0)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(objs))
	for _, obj := range objs {
		var v T
		if err := json.Unmarshal(obj.Doc, &v); err != nil {
			return nil, fmt.Errorf("store: decode %s %q: %w", obj.Kind, obj.ID, err)
		}
		out = append(out, v)
	}
	return out, nil
}
