package translate

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// Shared by the translators that serve the Gemini API from other providers
// (generate_openai.go, generate_anthropic.go).

// geminiCallIDs gives the function calls of a Gemini conversation the ids
// other APIs require, and the function responses the id of the call they
// answer: Gemini's own id when it has one, else "call_<n>" in order, a
// response answering the oldest unanswered call of its name.
type geminiCallIDs struct {
	n       int
	pending map[string][]string // function name → ids not answered yet
}

func (g *geminiCallIDs) call(fc *gemini.FunctionCall) string {
	id := fc.ID
	if id == "" {
		id = "call_" + strconv.Itoa(g.n)
	}
	g.n++
	if g.pending == nil {
		g.pending = map[string][]string{}
	}
	g.pending[fc.Name] = append(g.pending[fc.Name], id)
	return id
}

func (g *geminiCallIDs) response(fr *gemini.FunctionResponse) string {
	if fr.ID != "" {
		return fr.ID
	}
	q := g.pending[fr.Name]
	if len(q) == 0 {
		return "call_" + fr.Name
	}
	g.pending[fr.Name] = q[1:]
	return q[0]
}

// geminiToolSchema is a function declaration's parameters as a JSON Schema:
// parametersJsonSchema as is, else the OpenAPI-subset parameters with its
// type names lower-cased ("OBJECT" → "object") and Gemini's own
// propertyOrdering removed; {"type":"object","properties":{}} when absent.
func geminiToolSchema(d *gemini.FunctionDeclaration) json.RawMessage {
	if len(d.ParametersJSONSchema) > 0 && string(d.ParametersJSONSchema) != "null" {
		return d.ParametersJSONSchema
	}
	var v any
	if len(d.Parameters) == 0 || json.Unmarshal(d.Parameters, &v) != nil || v == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	b, err := json.Marshal(lowerSchemaTypes(v))
	if err != nil {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return b
}

func lowerSchemaTypes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "propertyOrdering")
		for k, e := range x {
			if s, ok := e.(string); ok && k == "type" {
				x[k] = strings.ToLower(s)
				continue
			}
			x[k] = lowerSchemaTypes(e)
		}
	case []any:
		for i := range x {
			x[i] = lowerSchemaTypes(x[i])
		}
	}
	return v
}

// geminiText joins the text parts of a content (thoughts excluded).
func geminiText(c *gemini.Content) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range c.Parts {
		if !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// geminiReply is a GenerateContentResponse written by a translator: one
// candidate with the parts, finish reason and usage given.
func geminiReply(id, model string, parts []gemini.Part, finish string, u *kernel.Usage) *gemini.GenerateContentResponse {
	r := &gemini.GenerateContentResponse{ModelVersion: model, ResponseID: id}
	c := gemini.Candidate{FinishReason: finish}
	if len(parts) > 0 {
		c.Content = &gemini.Content{Role: gemini.RoleModel, Parts: parts}
	}
	r.Candidates = []gemini.Candidate{c}
	if u != nil {
		r.UsageMetadata = geminiUsageOf(*u)
	}
	return r
}

// geminiStreamOut writes a translated Gemini API stream: events as they
// come, in the client's format (SSE or a JSON array).
type geminiStreamOut struct {
	cs    geminiClientStream
	out   []byte
	ended bool
}

func (g *geminiStreamOut) write(r *gemini.GenerateContentResponse) {
	if g.ended {
		return
	}
	b, err := json.Marshal(r)
	if err == nil {
		g.out = g.cs.event(g.out, b)
	}
}

// fail writes an error object as a stream event.
func (g *geminiStreamOut) fail(e *APIError) {
	g.out = g.cs.event(g.out, GeminiErrorBody(e))
}

// close writes the end of a JSON array stream.
func (g *geminiStreamOut) close() {
	g.ended = true
	g.out = g.cs.end(g.out)
}

func (g *geminiStreamOut) StreamContentType() string { return g.cs.contentType() }

// geminiCountEstimate answers countTokens for providers without it (or
// without a translation of it), without going upstream: a token per 4 bytes
// of the text in the request (every "text" member), like count_tokens'
// estimate. It is free.
type geminiCountEstimate struct{ countTokensEstimate }

var _ Translator = geminiCountEstimate{}

// Request answers {"totalTokens":N} at once.
func (geminiCountEstimate) Request(in *Inbound, _ *Target) (*Outbound, error) {
	b, err := json.Marshal(gemini.CountTokensResponse{TotalTokens: EstimateTokens(TextBytes(in.Body))})
	if err != nil {
		return nil, err
	}
	return &Outbound{Reply: b}, nil
}

// Error renders an upstream error in Google's shape (not reached).
func (geminiCountEstimate) Error(status int, body []byte) []byte {
	return GeminiErrorBody(upstreamOpenAIError(status, body, ""))
}
