package translate

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// ProviderGemini is Google's Gemini API (AI Studio,
// generativelanguage.googleapis.com): generateContent and
// streamGenerateContent?alt=sse, countTokens, batchEmbedContents, the key in
// x-goog-api-key. A deployment's base URL carries the API version
// (https://generativelanguage.googleapis.com/v1beta).
const ProviderGemini ProviderType = "gemini"

// HdrGoogAPIKey is the header of Google's API keys (the Gemini API's, and the
// virtual key of clients of the gateway's Gemini API).
const HdrGoogAPIKey = "x-goog-api-key"

// Gemini methods (the part of a model path after the colon).
const (
	GeminiGenerate = "generateContent"
	GeminiStream   = "streamGenerateContent"
	GeminiCount    = "countTokens"
	geminiEmbed    = "batchEmbedContents"
)

// geminiPath is the upstream path of a method on the deployment's model; a
// stream asks for SSE (alt=sse), the only stream format the translators read.
func geminiPath(t *Target, in *Inbound, method string) string {
	model := t.ProviderModel
	if model == "" {
		model = in.Model
	}
	prefix := "/models/"
	if t.Provider == ProviderVertex {
		prefix = "/publishers/google/models/"
	}
	p := joinPath(t.BasePath, prefix+url.PathEscape(strings.TrimPrefix(model, "models/"))+":"+method)
	if method == GeminiStream {
		p += "?alt=sse"
	}
	return p
}

// geminiHeaders are the credentials of a Gemini API request.
func geminiHeaders(t *Target) [][2]string {
	if t.APIKey == "" || t.Provider == ProviderVertex { // Vertex: an OAuth2 bearer (Target.Signer)
		return nil
	}
	return [][2]string{{HdrGoogAPIKey, t.APIKey}}
}

// geminiKernelUsage maps usageMetadata onto the kernel's disjoint kinds:
// promptTokenCount includes the cached tokens and tool-use prompts are input
// too; candidatesTokenCount excludes the thoughts, priced as reasoning.
func geminiKernelUsage(u *gemini.UsageMetadata) kernel.Usage {
	if u == nil {
		return kernel.Usage{}
	}
	cached := min(u.CachedContentTokenCount, u.PromptTokenCount)
	return kernel.Usage{
		Input:       u.PromptTokenCount - cached + u.ToolUsePromptTokenCount,
		CachedInput: cached,
		Output:      u.CandidatesTokenCount,
		Reasoning:   u.ThoughtsTokenCount,
	}
}

// geminiUsageOf reports kernel usage in usageMetadata's terms.
func geminiUsageOf(u kernel.Usage) *gemini.UsageMetadata {
	m := &gemini.UsageMetadata{
		PromptTokenCount:        u.Input + u.CachedInput + u.CacheWrite,
		CachedContentTokenCount: u.CachedInput,
		CandidatesTokenCount:    u.Output,
		ThoughtsTokenCount:      u.Reasoning,
	}
	m.TotalTokenCount = m.PromptTokenCount + m.CandidatesTokenCount + m.ThoughtsTokenCount
	return m
}

// geminiBlocked reports whether a finish reason means the answer was withheld
// by a safety or policy filter.
func geminiBlocked(reason string) bool {
	switch reason {
	case gemini.FinishSafety, gemini.FinishRecitation, gemini.FinishBlocklist, gemini.FinishProhibitedContent,
		gemini.FinishSPII, gemini.FinishImageSafety, gemini.FinishLanguage:
		return true
	}
	return false
}

// geminiFinishToOpenAI maps a finish reason (and whether the candidate holds
// function calls) to OpenAI's finish_reason.
func geminiFinishToOpenAI(reason string, calls bool) string {
	switch {
	case reason == gemini.FinishMaxTokens:
		return "length"
	case geminiBlocked(reason):
		return "content_filter"
	case calls:
		return "tool_calls"
	default:
		return "stop"
	}
}

// geminiFinishToAnthropic maps a finish reason to Anthropic's stop_reason.
func geminiFinishToAnthropic(reason string, calls bool) string {
	switch {
	case reason == gemini.FinishMaxTokens:
		return "max_tokens"
	case geminiBlocked(reason):
		return "refusal"
	case calls:
		return "tool_use"
	default:
		return "end_turn"
	}
}

// openAIFinishToGemini maps OpenAI's finish_reason to a Gemini finish reason.
func openAIFinishToGemini(f string) string {
	switch f {
	case "length":
		return gemini.FinishMaxTokens
	case "content_filter":
		return gemini.FinishSafety
	default: // stop, tool_calls, function_call
		return gemini.FinishStop
	}
}

// anthropicStopToGemini maps Anthropic's stop_reason to a Gemini finish reason.
func anthropicStopToGemini(s string) string {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return gemini.FinishMaxTokens
	case "refusal":
		return gemini.FinishSafety
	default:
		return gemini.FinishStop
	}
}

// --- errors ------------------------------------------------------------------

// GeminiErrorBody renders e in Google's error shape
// {"error":{"code":…,"message":…,"status":…}}.
func GeminiErrorBody(e *APIError) []byte {
	b, err := json.Marshal(gemini.ErrorResponse{Error: gemini.Status{
		Code: e.Status, Message: e.Message, Status: gemini.StatusOf(e.Status),
	}})
	if err != nil { // unreachable: strings and ints only
		return []byte(`{"error":{"code":500,"message":"internal error","status":"INTERNAL"}}`)
	}
	return b
}

// upstreamGeminiError reads a Google error body (an object, or the one-element
// array a JSON-array stream fails with) into an apiError, sanitized as every
// upstream error; anything else is read as upstreamOpenAIError does.
func upstreamGeminiError(status int, body []byte, key string) *APIError {
	var env gemini.ErrorResponse
	ok := json.Unmarshal(body, &env) == nil
	if !ok || env.Error.Message == "" {
		var arr []gemini.ErrorResponse
		if json.Unmarshal(body, &arr) == nil && len(arr) > 0 {
			env, ok = arr[0], true
		}
	}
	if !ok || env.Error.Message == "" {
		return upstreamOpenAIError(status, body, key)
	}
	e := &APIError{Status: status, Type: statusType(status), Message: env.Error.Message, Code: env.Error.Status}
	e.sanitizeUpstream(key)
	if status == http.StatusBadRequest && bytes.Contains(env.Error.Details, []byte(`"API_KEY_INVALID"`)) {
		// Google answers a bad key with 400 INVALID_ARGUMENT, reason
		// API_KEY_INVALID: the gateway's credential problem, not the client's.
		e.Message, e.Code = "the provider rejected the gateway's credentials for this deployment", "upstream_auth_error"
	}
	return e
}

// --- stream usage --------------------------------------------------------------

// geminiStreamUsage follows the usage of a Gemini SSE stream: every event may
// carry usageMetadata, the last one (with the finish reason) the final
// counts, each replacing the earlier ones. Until a finish reason has come
// with usage (an abort), the output is at least the estimate from the
// streamed text.
type geminiStreamUsage struct {
	usage    *gemini.UsageMetadata
	finished bool
	text     int64
}

// observe updates the usage from one decoded event.
func (s *geminiStreamUsage) observe(r *gemini.GenerateContentResponse) {
	if r.UsageMetadata != nil {
		s.usage = r.UsageMetadata
	}
	for _, c := range r.Candidates {
		if c.FinishReason != "" && r.UsageMetadata != nil {
			s.finished = true
		}
		if c.Content == nil {
			continue
		}
		for _, p := range c.Content.Parts {
			s.text += int64(len(p.Text))
			if p.FunctionCall != nil {
				s.text += int64(len(p.FunctionCall.Name) + len(p.FunctionCall.Args))
			}
		}
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" && r.UsageMetadata != nil {
		s.finished = true
	}
}

// result is the stream's usage and whether the provider reported it.
func (s *geminiStreamUsage) result() (kernel.Usage, bool) {
	u := geminiKernelUsage(s.usage)
	if s.finished {
		return u, true
	}
	u.Output = max(u.Output, EstimateTokens(s.text))
	return u, false
}

// geminiEvents decodes the events of a Gemini SSE stream: fn gets each
// GenerateContentResponse; an event that is not one (an error object) is
// given to onError, when set.
type geminiEvents struct {
	sse     SSEParser
	usage   geminiStreamUsage
	onEvent func(r *gemini.GenerateContentResponse)
	onError func(data []byte)
}

// feed parses chunk (and, at eos, what is left).
func (g *geminiEvents) feed(chunk []byte, eos bool) error {
	err := g.sse.FeedAll(chunk, eos, g.event)
	return err
}

func (g *geminiEvents) event(ev SSEEvent) {
	var r struct {
		gemini.GenerateContentResponse
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(ev.Data, &r) != nil {
		return
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		if g.onError != nil {
			g.onError(ev.Data)
		}
		return
	}
	g.usage.observe(&r.GenerateContentResponse)
	if g.onEvent != nil {
		g.onEvent(&r.GenerateContentResponse)
	}
}

// geminiCallID is the tool call id of a function call: its own when Gemini
// gave one, else one made from its position in the response.
func geminiCallID(fc *gemini.FunctionCall, n int) string {
	if fc.ID != "" {
		return fc.ID
	}
	return "call_" + strconv.Itoa(n)
}

// geminiArgs renders a function call's args as a compact JSON object string.
func geminiArgs(args json.RawMessage) string { return toolArguments(args) }

// jsonObject returns raw when it is a JSON object, else {} (Gemini requires
// objects for args and function responses).
func jsonObject(raw json.RawMessage) json.RawMessage {
	v := SkipSpace(raw, 0)
	if v < len(raw) && raw[v] == '{' && json.Valid(raw) {
		return raw
	}
	return json.RawMessage(`{}`)
}

// functionResponse wraps a tool result's text as a function response object:
// a JSON object result passes as is, anything else is {"result": text}.
func functionResponse(text string) json.RawMessage {
	if o := jsonObject(json.RawMessage(text)); len(o) > 2 || strings.TrimSpace(text) == "{}" {
		return o
	}
	b, _ := json.Marshal(map[string]string{"result": text})
	return b
}

// GeminiModelPath splits a Gemini API model path (query excluded) into its
// model (unescaped) and method.
func GeminiModelPath(path string) (model, method string, ok bool) {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/models/"); !ok {
			return "", "", false
		}
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || strings.IndexByte(rest[:i], '/') >= 0 {
		return "", "", false
	}
	m, err := url.PathUnescape(rest[:i])
	if err != nil || m == "" {
		return "", "", false
	}
	return m, rest[i+1:], true
}

// ParseGeminiRequest reads a Gemini API request: the model and the method
// from the path, max tokens from generationConfig.maxOutputTokens; the body
// is validated like every other (one scan, JSON errors located).
func ParseGeminiRequest(path string, body []byte) (*Inbound, error) {
	in, err := ParseRequest(APIGeminiGenerate, body)
	if err != nil {
		return nil, err
	}
	model, method, ok := GeminiModelPath(path)
	if !ok {
		return nil, &fieldError{"model", "the path names no model"}
	}
	in.Path, in.Model, in.Stream, in.MaxTokens = path, model, method == GeminiStream, 0
	in.User, in.IncludeUsage = "", false
	if method == GeminiCount {
		in.API = APIGeminiCount
		return in, nil
	}
	v, err := TopLevelMember(body, "generationConfig")
	if err != nil || !v.isObject(body) {
		return in, nil //nolint:nilerr // a body without generationConfig
	}
	_, err = ScanObject(body, v.Start, false, func(key []byte, v Span) error {
		if KeyIs(key, "maxOutputTokens") && !v.IsNull(body) {
			n, ok := intValue(body, v)
			if !ok {
				return &fieldError{"generationConfig.maxOutputTokens", "must be a non-negative integer"}
			}
			in.MaxTokens = n
		}
		return nil
	})
	return in, err
}

// geminiModelOf is a model as models.list and models.get write it.
func geminiModelOf(id string) gemini.Model {
	return gemini.Model{
		Name: "models/" + id, BaseModelID: id, DisplayName: id,
		SupportedGenerationMethods: []string{GeminiGenerate, GeminiStream, GeminiCount},
	}
}

// GeminiModelBody is the model id as models.get writes it (JSON).
func GeminiModelBody(id string) ([]byte, error) { return json.Marshal(geminiModelOf(id)) }

// GeminiModelsBody is the models.list of the model ids, sorted by name.
func GeminiModelsBody(ids []string) ([]byte, error) {
	list := gemini.ListModelsResponse{Models: make([]gemini.Model, 0, len(ids))}
	for _, id := range ids {
		list.Models = append(list.Models, geminiModelOf(id))
	}
	slices.SortFunc(list.Models, func(a, b gemini.Model) int { return strings.Compare(a.Name, b.Name) })
	return json.Marshal(list)
}
