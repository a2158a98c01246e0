package translate

import (
	"context"
	"net/url"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
)

// API is a client-facing API: the format of the request the client sent and of
// the response it expects.
type API string

// Client APIs.
const (
	APIChat          API = "openai.chat_completions" // POST /v1/chat/completions
	APICompletions   API = "openai.completions"      // POST /v1/completions
	APIEmbeddings    API = "openai.embeddings"       // POST /v1/embeddings
	APIMessages      API = "anthropic.messages"      // POST /v1/messages
	APIMessagesCount API = "anthropic.count_tokens"  // POST /v1/messages/count_tokens
	APIResponses     API = "openai.responses"        // POST /v1/responses
)

// Inbound is what the processor parsed from the client's request body.
type Inbound struct {
	API       API
	RequestID string // the gateway's id of the request
	Body      []byte // the client's body, as received
	Model     string
	Stream    bool
	MaxTokens int64 // as sent by the client, 0 when absent
	User      string
	// ClampMaxTokens, when > 0, is the max_tokens the kernel allows: the outbound
	// body must carry it instead of the client's value.
	ClampMaxTokens int64
	// IncludeUsage reports whether the client itself asked for the stream's usage
	// event (stream_options.include_usage=true); the gateway always asks for it.
	IncludeUsage bool
	// AnthropicVersion is the client's anthropic-version header ("" when
	// absent): Anthropic translators pass it upstream.
	AnthropicVersion string
	// Path is the client's :path, query included, for APIs that carry
	// request parameters there (the Gemini API: model, method, alt=sse).
	Path string
	// ReplyInPlace: the reply body Response gets is the data plane's own
	// buffer, lent until the reply (an in-process data plane): a translator
	// may rewrite bytes of it in place, keeping its length, and return it
	// (the processor then sends no body mutation). Over gRPC the body is the
	// processor's copy and this is false.
	ReplyInPlace bool
	// Unit: what a request of a route charged per unit asks for (units.go);
	// nil on token routes.
	Unit *UnitRequest

	// fields locates the members above (and stream_options, metadata) in Body,
	// so translators rewrite only what changes without decoding the body.
	Fields *requestFields
}

// Outbound is the request to send upstream.
type Outbound struct {
	// Path is the full upstream :path (provider base path included, query too).
	Path string
	// Headers to set (overwriting), e.g. credentials and anthropic-version.
	Headers [][2]string
	// Remove lists headers to remove (the client's credentials are always removed
	// by the processor; list others here).
	Remove []string
	// Body replaces the request body; nil keeps the client's body unchanged.
	Body []byte
	// Reply, when non-nil, is answered to the client at once (200, JSON)
	// instead of going upstream, e.g. a count_tokens estimate; the request
	// settles at zero usage.
	Reply []byte
}

// Translator turns one client API into one provider's API, for one request.
// There is one implementation per client-API × provider pair, each in its own
// file (e.g. chat_openai.go, chat_anthropic.go, messages_anthropic.go).
// A Translator is created per request and may keep state between calls; the
// processor calls it from one goroutine.
//
// Passing bytes unchanged: Response and StreamChunk may return their input
// slice itself (same backing array and length); the processor then sends no
// body mutation. Any other slice replaces the body or chunk (an empty one
// clears it).
type Translator interface {
	// Request builds the upstream request. in.Body is the client's body and must
	// not be modified (Outbound.Body nil keeps it).
	Request(in *Inbound, t *Target) (*Outbound, error)
	// Response converts a complete (non-streamed) 2xx provider body into the
	// client's format and extracts the usage. An error means no usage could be
	// read: the processor then passes out (or the body) and estimates usage.
	Response(body []byte) (out []byte, u kernel.Usage, err error)
	// StreamChunk converts provider SSE bytes, split anywhere, into client SSE
	// bytes to send now; eos marks the end of the provider's stream (flush any
	// tail events; chunk may then be empty, or nil when the stream ended with
	// trailers and nothing more can be sent). It never blocks.
	StreamChunk(chunk []byte, eos bool) (out []byte, err error)
	// StreamUsage is the usage seen in the stream so far, and whether the provider
	// reported it (false: only an estimate from the streamed text, for aborts;
	// the processor adds the input estimate from the prompt).
	StreamUsage() (u kernel.Usage, reported bool)
	// Error converts a provider error response body into the client's error
	// format (status is the upstream HTTP status). It must not echo provider
	// credentials (see redactSecrets).
	Error(status int, body []byte) []byte
}

// Client APIs of Google's Gemini API.
const (
	// APIGeminiGenerate is POST /v1beta/models/{model}:generateContent and
	// :streamGenerateContent (and the same under /v1/).
	APIGeminiGenerate API = "gemini.generate_content"
	// APIGeminiCount is POST /v1beta/models/{model}:countTokens.
	APIGeminiCount API = "gemini.count_tokens"
)

// GeminiSSE reports whether the client's :path asks for SSE (alt=sse).
func GeminiSSE(path string) bool {
	_, q, _ := strings.Cut(path, "?")
	v, _ := url.ParseQuery(q)
	return v.Get("alt") == "sse"
}

// StreamContentTyper is implemented by translators whose client stream is
// not SSE (the Gemini API's JSON array): the processor sets the content type
// of a streamed 2xx reply to it ("" keeps the provider's).
type StreamContentTyper interface {
	StreamContentType() string
}

// Headers of the client's credentials, which translators replace with the
// provider's.
const (
	HdrAuthorization = "authorization"
	HdrXAPIKey       = "x-api-key"
	HdrAPIKey        = "api-key" // Azure-style clients send their key here
)

// SameBytes reports whether a is b itself (a translator passing its input).
func SameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Sign adds t's signer's headers to o, the request of method to path (o's
// own path when it set one) with o's body, else the client's (body).
func (o *Outbound) Sign(ctx context.Context, t *Target, method, path string, body []byte) error {
	if o.Body != nil {
		body = o.Body
	}
	if o.Path != "" {
		path = o.Path
	}
	h, err := t.Signer.SignRequest(ctx, &UpstreamRequest{Method: method, Host: t.Host, Path: path, Body: body})
	if err != nil {
		return err
	}
	o.Headers = append(o.Headers, h...)
	return nil
}
