package translate

import (
	"encoding/json"
	"strconv"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// generateGemini serves the Gemini API from a Gemini deployment with no
// translation: the path names the deployment's model (and asks for SSE on
// streams), maxOutputTokens is lowered to the kernel's clamp, the credentials
// are replaced, and usage is read from usageMetadata. A client that did not
// ask for alt=sse gets the stream as Gemini's JSON array, made from the SSE
// events. With count=true it serves countTokens, which is free.
type generateGemini struct {
	count  bool
	apiKey string
	ev     geminiEvents
	cs     geminiClientStream
	out    []byte
	// name is the client's model (model as a JSON string): replies carry it
	// as modelVersion, as every route names the model the client asked for.
	name  string
	model []byte
	ed    sseEditor // an SSE stream passed with modelVersion renamed
}

var _ Translator = (*generateGemini)(nil)

// Request sets the path and, when the kernel clamps it, maxOutputTokens.
func (t *generateGemini) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey = target.APIKey
	t.name, t.model = in.Model, appendJSONString(t.model[:0], in.Model)
	t.cs.sse = GeminiSSE(in.Path)
	t.ev.onEvent = t.event
	t.ev.onError = t.streamError
	method := GeminiGenerate
	switch {
	case t.count:
		method = GeminiCount
	case in.Stream:
		method = GeminiStream
	}
	out := &Outbound{Path: geminiPath(target, in, method), Headers: geminiHeaders(target)}
	var err error
	switch {
	case t.count:
		out.Body, err = renameCountModel(in.Body, target)
	case in.ClampMaxTokens > 0 && (in.MaxTokens == 0 || in.MaxTokens > in.ClampMaxTokens):
		out.Body, err = setMaxOutputTokens(in.Body, in.ClampMaxTokens)
	}
	return out, err
}

// setMaxOutputTokens returns body with generationConfig.maxOutputTokens = n,
// its other members kept.
func setMaxOutputTokens(body []byte, n int64) ([]byte, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	cfg := map[string]json.RawMessage{}
	if raw, ok := req["generationConfig"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, &fieldError{"generationConfig", "must be an object"}
		}
	}
	cfg["maxOutputTokens"] = strconv.AppendInt(nil, n, 10)
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	req["generationConfig"] = raw
	return json.Marshal(req)
}

// renameCountModel names the deployment's model in countTokens'
// generateContentRequest.model, which the API requires to match the path.
func renameCountModel(body []byte, target *Target) ([]byte, error) {
	if target.ProviderModel == "" {
		return nil, nil
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	raw, ok := req["generateContentRequest"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var gcr map[string]json.RawMessage
	if err := json.Unmarshal(raw, &gcr); err != nil {
		return nil, &fieldError{"generateContentRequest", "must be an object"}
	}
	gcr["model"], _ = json.Marshal("models/" + target.ProviderModel)
	if req["generateContentRequest"], ok = marshalRaw(gcr); !ok {
		return nil, nil
	}
	return json.Marshal(req)
}

func marshalRaw(v any) (json.RawMessage, bool) {
	b, err := json.Marshal(v)
	return b, err == nil
}

// Response reads the usage; the body passes unchanged (countTokens: free).
func (t *generateGemini) Response(body []byte) ([]byte, kernel.Usage, error) {
	if t.count {
		return body, kernel.Usage{}, nil
	}
	var r struct {
		UsageMetadata *gemini.UsageMetadata `json:"usageMetadata"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return body, kernel.Usage{}, err
	}
	body = t.renameModel(body)
	if r.UsageMetadata == nil {
		return body, kernel.Usage{}, errNoUsage
	}
	return body, geminiKernelUsage(r.UsageMetadata), nil
}

// renameModel returns the object b with its top-level modelVersion set to
// the client's model (b itself when it has none or already that one).
func (t *generateGemini) renameModel(b []byte) []byte {
	at := t.modelVersion(b)
	if !at.OK() {
		return b
	}
	return applyEdits(b, []edit{{at.Start, at.End, t.model}})
}

// modelVersion is the span of the object b's top-level modelVersion string
// when it differs from the client's model (absent otherwise).
func (t *generateGemini) modelVersion(b []byte) Span {
	if len(t.model) == 0 || len(b) == 0 || b[0] != '{' {
		return absent
	}
	at := absent
	_, _ = ScanObject(b, 0, false, func(key []byte, v Span) error {
		if KeyIs(key, "modelVersion") && b[v.Start] == '"' {
			at = v
			return errStopScan
		}
		return nil
	})
	if at.OK() && string(at.bytes(b)) == string(t.model) {
		return absent
	}
	return at
}

// StreamChunk reads the usage from the events; SSE passes unchanged, a JSON
// array stream is written from the events.
func (t *generateGemini) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	t.out = t.out[:0]
	if t.cs.sse { // passed as is but for modelVersion; the editor's events feed the usage
		if t.ed.fn == nil {
			t.ed.fn, t.ed.active = t.SSEEvent, true
		}
		return t.ed.feed(chunk, eos)
	}
	err := t.ev.feed(chunk, eos)
	if eos {
		t.out = t.cs.end(t.out)
	}
	return append([]byte{}, t.out...), err
}

// SSEEvent reads one event of a passed SSE stream and renames its
// modelVersion in place.
func (t *generateGemini) SSEEvent(ev SSEEvent) eventAction {
	t.ev.event(ev)
	if at := t.modelVersion(ev.Data); at.OK() {
		return eventAction{at: at, with: t.model}
	}
	return eventAction{at: absent}
}

func (t *generateGemini) event(r *gemini.GenerateContentResponse) {
	if t.cs.sse {
		return
	}
	if r.ModelVersion != "" {
		r.ModelVersion = t.name
	}
	b, err := json.Marshal(r)
	if err == nil {
		t.out = t.cs.event(t.out, b)
	}
}

// streamError passes an error event (sanitized) in the client's stream format.
func (t *generateGemini) streamError(data []byte) {
	if !t.cs.sse {
		t.out = t.cs.event(t.out, GeminiErrorBody(upstreamGeminiError(500, data, t.apiKey)))
	}
}

// StreamUsage is the usage of the last usageMetadata, or an estimate.
func (t *generateGemini) StreamUsage() (kernel.Usage, bool) { return t.ev.usage.result() }

// Error passes Google's error in Google's shape, sanitized.
func (t *generateGemini) Error(status int, body []byte) []byte {
	return GeminiErrorBody(upstreamGeminiError(status, body, t.apiKey))
}

func (t *generateGemini) StreamContentType() string { return t.cs.contentType() }

// geminiClientStream writes the events of a Gemini API stream in the format
// the client asked for: SSE ("data: …" and a blank line, CRLF as Google
// writes them) with alt=sse, else one JSON array whose elements are written
// as they come ("[" first, "," between, "]" at the end).
type geminiClientStream struct {
	sse    bool
	n      int
	closed bool
}

// event appends one event (a GenerateContentResponse or error object).
func (g *geminiClientStream) event(out, data []byte) []byte {
	if g.closed {
		return out
	}
	if g.sse {
		out = append(out, "data: "...)
		out = append(out, data...)
		return append(out, "\r\n\r\n"...)
	}
	if g.n == 0 {
		out = append(out, '[')
	} else {
		out = append(out, ",\r\n"...)
	}
	g.n++
	return append(out, data...)
}

// end closes a JSON array stream.
func (g *geminiClientStream) end(out []byte) []byte {
	if g.sse || g.closed {
		return out
	}
	g.closed = true
	if g.n == 0 {
		out = append(out, '[')
	}
	return append(out, ']')
}

// contentType is the content type of a JSON array stream ("" for SSE).
func (g *geminiClientStream) contentType() string {
	if g.sse {
		return ""
	}
	return "application/json; charset=UTF-8"
}
