package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
)

// APIPassthrough is a pass-through route, /passthrough/PROVIDER_ID/…: the
// request and reply go unchanged but for the credentials (#34).
const APIPassthrough API = "passthrough"

// Passthrough forwards one request unchanged to its provider: the path below
// the provider's base URL, the query, the body and the reply, with only the
// provider's credential added. It reads the usage of replies whose shape it
// knows (OpenAI's and Anthropic's JSON usage, their SSE usage events, the
// Responses API's, Gemini's usageMetadata). It is not in the table of pairs:
// any provider type is passed through alike.
type Passthrough struct {
	// Rest is the path after /passthrough/PROVIDER_ID, query included.
	Rest string
	// PerCall: the call is charged one unit (Usage.Input 1) whatever the
	// reply says; the target's price is the price of a call.
	PerCall bool

	provider ProviderType
	apiKey   string
	line     []byte // an SSE line split across chunks
	usage    kernel.Usage
	seen     bool
	model    string // the model the reply named (Reply)
}

var _ Translator = (*Passthrough)(nil)

// PassthroughPath is the upstream :path of rest on a provider whose base
// URL's path is base: rest as is when it already starts with base (clients
// name the provider's documented path, /v1/…), else below base.
func PassthroughPath(base, rest string) string {
	p, _, _ := strings.Cut(rest, "?")
	if base == "" || p == base || strings.HasPrefix(p, base+"/") {
		return rest
	}
	return base + rest
}

// Request sets the path and the provider's credential; the body is kept.
func (p *Passthrough) Request(_ *Inbound, t *Target) (*Outbound, error) {
	p.provider, p.apiKey = t.Provider, t.APIKey
	out := &Outbound{Path: PassthroughPath(t.BasePath, p.Rest)}
	switch t.Provider {
	case ProviderAnthropic:
		if t.APIKey != "" {
			out.Headers = [][2]string{{HdrXAPIKey, t.APIKey}}
		}
	case ProviderAzure:
		if t.APIKey != "" {
			out.Headers = [][2]string{{HdrAPIKey, t.APIKey}}
		}
	case ProviderGemini:
		out.Headers = geminiHeaders(t)
	case ProviderBedrock, ProviderVertex: // Target.Signer signs the request
	default:
		if t.APIKey != "" {
			out.Headers = [][2]string{{HdrAuthorization, "Bearer " + t.APIKey}}
		}
	}
	return out, nil
}

// Response passes body and reads its usage; an error when it has none.
func (p *Passthrough) Response(body []byte) ([]byte, kernel.Usage, error) {
	model, u, ok := passthroughUsage(p.provider, body)
	p.model = model
	if ok {
		p.usage, p.seen = u, true
	}
	if p.PerCall {
		return body, kernel.Usage{Input: 1}, nil
	}
	if !ok {
		return body, kernel.Usage{}, errPassthroughNoUsage
	}
	return body, u, nil
}

// Reply is what the reply (or the stream's events) said of itself: the
// model it named ("" when none) and its token usage (ok false when it
// reported none), whether or not the call is charged per call. The
// processor charges those tokens at the model's price when it has one.
func (p *Passthrough) Reply() (model string, u kernel.Usage, ok bool) {
	return p.model, p.usage, p.seen
}

var errPassthroughNoUsage = errors.New("translate: the reply has no usage the gateway can read")

// StreamChunk passes chunk and reads the usage of its SSE data lines.
func (p *Passthrough) StreamChunk(chunk []byte, _ bool) ([]byte, error) {
	rest := chunk
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(p.line) < 1<<20 { // a line longer than 1 MiB carries no usage we read
				p.line = append(p.line, rest...)
			}
			break
		}
		line := rest[:i]
		if len(p.line) > 0 {
			p.line = append(p.line, line...)
			line = p.line
		}
		p.observe(bytes.TrimRight(line, "\r"))
		p.line = p.line[:0]
		rest = rest[i+1:]
	}
	return chunk, nil
}

func (p *Passthrough) observe(line []byte) {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return
	}
	model, u, ok := passthroughUsage(p.provider, data)
	if p.model == "" {
		p.model = model // the first event naming one: a stream's model does not change
	}
	if !ok {
		return
	}
	p.seen = true
	// Events report cumulative counts (Anthropic's input in message_start,
	// output in message_delta; Gemini's on every chunk): the largest holds.
	p.usage.Input = max(p.usage.Input, u.Input)
	p.usage.CachedInput = max(p.usage.CachedInput, u.CachedInput)
	p.usage.CacheWrite = max(p.usage.CacheWrite, u.CacheWrite)
	p.usage.Output = max(p.usage.Output, u.Output)
	p.usage.Reasoning = max(p.usage.Reasoning, u.Reasoning)
}

// StreamUsage is the usage the stream's events reported.
func (p *Passthrough) StreamUsage() (kernel.Usage, bool) {
	if p.PerCall {
		return kernel.Usage{Input: 1}, true
	}
	return p.usage, p.seen
}

// Error passes the provider's error unchanged: the client called the
// provider's API and reads its errors.
func (p *Passthrough) Error(_ int, body []byte) []byte {
	return []byte(redactSecrets(string(body), p.apiKey))
}

// passUsage is every usage member the known shapes use.
type passUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheRead           int64 `json:"cache_read_input_tokens"`
	CacheCreation       int64 `json:"cache_creation_input_tokens"`
	PromptTokensDetails struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails struct {
		Cached int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	CompletionTokensDetails struct {
		Reasoning int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	OutputTokensDetails struct {
		Reasoning int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	// Bedrock's Converse (and its stream's metadata event).
	BedrockInput      int64 `json:"inputTokens"`
	BedrockOutput     int64 `json:"outputTokens"`
	BedrockCacheRead  int64 `json:"cacheReadInputTokens"`
	BedrockCacheWrite int64 `json:"cacheWriteInputTokens"`
}

type passGeminiUsage struct {
	Prompt     int64 `json:"promptTokenCount"`
	Cached     int64 `json:"cachedContentTokenCount"`
	Candidates int64 `json:"candidatesTokenCount"`
	ToolPrompt int64 `json:"toolUsePromptTokenCount"`
	Thoughts   int64 `json:"thoughtsTokenCount"`
}

// passNested is the object of an event that holds the model and usage.
type passNested struct {
	Model string     `json:"model"`
	Usage *passUsage `json:"usage"`
}

type passReply struct {
	Model         string           `json:"model"`
	Usage         *passUsage       `json:"usage"`
	UsageMetadata *passGeminiUsage `json:"usageMetadata"`
	ModelVersion  string           `json:"modelVersion"` // Gemini's
	// Anthropic's message_start and the Responses API's response.* events.
	Message  *passNested `json:"message"`
	Response *passNested `json:"response"`
}

// model is the model the reply or event names: its own "model", Gemini's
// modelVersion, or the one in its "message" or "response".
func (r *passReply) model() string {
	switch {
	case r.Model != "":
		return r.Model
	case r.ModelVersion != "":
		return r.ModelVersion
	case r.Message != nil && r.Message.Model != "":
		return r.Message.Model
	case r.Response != nil:
		return r.Response.Model
	}
	return ""
}

// passthroughUsage reads the model and usage of a JSON reply or event of a
// known shape; ok is false when it has no usage.
func passthroughUsage(provider ProviderType, body []byte) (model string, _ kernel.Usage, ok bool) {
	var r passReply
	if json.Unmarshal(body, &r) != nil {
		return "", kernel.Usage{}, false
	}
	model = r.model()
	if g := r.UsageMetadata; g != nil {
		cached := min(g.Cached, g.Prompt)
		return model, kernel.Usage{Input: g.Prompt - cached + g.ToolPrompt, CachedInput: cached, Output: g.Candidates, Reasoning: g.Thoughts}, true
	}
	u := r.Usage
	if u == nil && r.Message != nil {
		u = r.Message.Usage
	}
	if u == nil && r.Response != nil {
		u = r.Response.Usage
	}
	if u == nil {
		return model, kernel.Usage{}, false
	}
	if provider == ProviderBedrock { // disjoint already
		return model, kernel.Usage{Input: u.BedrockInput, CachedInput: u.BedrockCacheRead, CacheWrite: u.BedrockCacheWrite, Output: u.BedrockOutput}, true
	}
	if provider == ProviderAnthropic { // disjoint already
		return model, kernel.Usage{Input: u.InputTokens, CachedInput: u.CacheRead, CacheWrite: u.CacheCreation, Output: u.OutputTokens}, true
	}
	if u.PromptTokens+u.CompletionTokens > 0 { // chat, completions, embeddings
		return model, openAIUsage{
			prompt: u.PromptTokens, completion: u.CompletionTokens,
			cached: u.PromptTokensDetails.Cached, reasoning: u.CompletionTokensDetails.Reasoning,
		}.kernel(), true
	}
	return model, openAIUsage{ // the Responses API
		prompt: u.InputTokens, completion: u.OutputTokens,
		cached: u.InputTokensDetails.Cached, reasoning: u.OutputTokensDetails.Reasoning,
	}.kernel(), true
}

// PassthroughModel is the model a pass-through request names: the body's
// "model" member, else a Gemini path's models/{model}:method or a Bedrock
// path's /model/{model}/operation; "" when none.
func PassthroughModel(rest string, body []byte) string {
	if len(body) > 0 && body[0] == '{' {
		var m struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(body, &m) == nil && m.Model != "" {
			return m.Model
		}
	}
	p, _, _ := strings.Cut(rest, "?")
	if _, after, ok := strings.Cut(p, "/models/"); ok {
		if name, _, ok := strings.Cut(after, ":"); ok && name != "" {
			return name
		}
	}
	if after, ok := strings.CutPrefix(p, "/model/"); ok {
		if name, _, ok := strings.Cut(after, "/"); ok && name != "" {
			if u, err := url.PathUnescape(name); err == nil {
				return u
			}
		}
	}
	return ""
}

// PassthroughPrefix is the path prefix of the pass-through routes:
// /passthrough/PROVIDER_ID/REST.
const PassthroughPrefix = "/passthrough/"

// PassthroughSplit splits a pass-through :path into the provider id and the
// rest (from its "/", query included).
func PassthroughSplit(path string) (provider, rest string) {
	after := strings.TrimPrefix(path, PassthroughPrefix)
	provider, rest, _ = strings.Cut(after, "/")
	rest = "/" + rest
	if q := strings.IndexByte(provider, '?'); q >= 0 { // /passthrough/id?x
		provider, rest = provider[:q], "/"+provider[q:]
	}
	return provider, rest
}

// CleanPassthroughPath reports whether p is a plain path the grants can be
// checked on: a provider that decodes %2e%2e or %2f, or resolves "..",
// would otherwise serve a path other than the one granted.
func CleanPassthroughPath(p string) bool {
	if strings.ContainsRune(p, '\\') {
		return false
	}
	lower := strings.ToLower(p)
	for _, enc := range []string{"%2e", "%2f", "%5c"} {
		if strings.Contains(lower, enc) {
			return false
		}
	}
	for seg := range strings.SplitSeq(strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/"), "/") {
		if seg == "." || seg == ".." || seg == "" && p != "/" {
			return false
		}
	}
	return true
}
