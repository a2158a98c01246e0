package upstream

import (
	"context"

	"github.com/tollgate-ai/tollgate/kernel"
)

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
	// (bedrock: AWS SigV4); see extproc/upstream.go.
	Signer RequestSigner `json:"-"`
}

// RequestSigner adds the credentials that depend on the final upstream
// request: AWS SigV4 (which signs the body) or a fresh OAuth2 access token.
// The processor calls it after the translator has built the request and
// before replying to Envoy, so the signature covers the body Envoy sends.
// Implementations cache what they can (credentials, tokens) and must not
// log or return secrets in errors.
type RequestSigner interface {
	SignRequest(ctx context.Context, r *Request) ([][2]string, error)
}

// Request is what a RequestSigner signs.
type Request struct {
	Method string
	Host   string // the deployment's host (Target.Host)
	Path   string // the escaped :path, query included
	Body   []byte
}

// RequestSignerFunc adapts a function to RequestSigner.
type RequestSignerFunc func(ctx context.Context, r *Request) ([][2]string, error)

// SignRequest calls f.
func (f RequestSignerFunc) SignRequest(ctx context.Context, r *Request) ([][2]string, error) {
	return f(ctx, r)
}
