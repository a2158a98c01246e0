package translate

import "github.com/tollgate-ai/tollgate/upstream"

// The upstream a translator builds a request for (package upstream, which
// routing shares).
type (
	// Target is where a request goes: one deployment of a model group.
	Target = upstream.Target
	// ProviderType is the wire format of a deployment's provider.
	ProviderType = upstream.ProviderType
	// RequestSigner signs an upstream request once its body is final.
	RequestSigner = upstream.RequestSigner
	// UpstreamRequest is what a RequestSigner signs.
	UpstreamRequest = upstream.Request
	// RequestSignerFunc adapts a function to RequestSigner.
	RequestSignerFunc = upstream.RequestSignerFunc
)

// Provider types of upstream.
const (
	ProviderOpenAI    = upstream.ProviderOpenAI
	ProviderAzure     = upstream.ProviderAzure
	ProviderAnthropic = upstream.ProviderAnthropic
)
