package translate

import (
	"bytes"
	"net/url"
	"strconv"

	"github.com/tollgate-ai/tollgate/kernel"
)

// openAIOp describes one OpenAI operation for the shared rewrite.
type openAIOp struct {
	// path is the operation's path below the API root: "/chat/completions".
	path string
	// streamUsage: the operation streams and accepts stream_options.include_usage.
	streamUsage bool
	// maxTokensKey is the member a clamp adds when the client sent no bound
	// ("" when the operation has no output bound, e.g. embeddings).
	maxTokensKey string
}

// Operations of the OpenAI client APIs.
var (
	opChat        = openAIOp{path: "/chat/completions", streamUsage: true, maxTokensKey: "max_completion_tokens"}
	opCompletions = openAIOp{path: "/completions", streamUsage: true, maxTokensKey: "max_tokens"}
	opEmbeddings  = openAIOp{path: "/embeddings"}
)

// openAIFormat is the shared half of every translator whose provider speaks
// OpenAI's wire format (OpenAI, OpenAI-compatible servers, Azure OpenAI): the
// request body is edited in place (model, stream_options, max tokens), responses
// pass through unchanged, and usage is read from the JSON body or the SSE events.
type openAIFormat struct {
	apiKey string // redacted from upstream error messages
	usage  openAIStreamUsage
	model  replyModel // the reply names the client's model (reply_model.go)

	// strip: the gateway added include_usage, so the usage-only event the
	// client never asked for is removed from the stream (clients that read
	// choices[0] of every chunk would break on it).
	strip bool
	ed    sseEditor
}

// rewrite edits the client's body for the provider: the model renamed,
// stream_options.include_usage forced on streams, max tokens clamped, the
// Tollgate tags removed from metadata.
// It returns nil when nothing changes.
func (o *openAIFormat) rewrite(in *Inbound, op openAIOp, model string) []byte {
	b := in.Body
	o.model = newReplyModel(in.Model, "", false, in.ReplyInPlace)
	f, err := in.bodyFields()
	if err != nil {
		return nil
	}
	e := bodyEdits{edits: make([]edit, 0, 4)}
	if model != "" {
		q := appendJSONString(make([]byte, 0, len(model)+2), model)
		if f.model.OK() {
			if !bytes.Equal(f.model.bytes(b), q) {
				e.replace(f.model, q)
			}
		} else {
			e.add("model", q)
		}
	}
	if op.streamUsage && in.Stream {
		o.strip = !in.IncludeUsage
		so := f.streamOptions
		switch {
		case !so.OK():
			e.add("stream_options", []byte(`{"include_usage":true}`))
		case so.isObject(b):
			e.edits = append(e.edits, includeUsageEdits(b, so)...)
		default: // null or not an object
			e.replace(so, []byte(`{"include_usage":true}`))
		}
	}
	if text, ok := metadataWithoutTags(b, f.metadata); ok { // tags.go
		e.replace(f.metadata, text)
	}
	if in.ClampMaxTokens > 0 {
		n := strconv.AppendInt(nil, in.ClampMaxTokens, 10)
		clamped := false
		for _, s := range []Span{f.maxTokens, f.maxCompletionTokens, f.maxOutputTokens} {
			if s.OK() && !s.IsNull(b) {
				e.replace(s, n)
				clamped = true
			}
		}
		if !clamped && op.maxTokensKey != "" {
			// A null member stays; the added one comes first and wins nowhere, so
			// replace nulls too.
			for _, s := range []Span{f.maxTokens, f.maxCompletionTokens, f.maxOutputTokens} {
				if s.OK() {
					e.replace(s, n)
					clamped = true
				}
			}
			if !clamped {
				e.add(op.maxTokensKey, n)
			}
		}
	}
	return e.apply(b, f)
}

// includeUsageEdits sets include_usage to true inside the stream_options object.
func includeUsageEdits(b []byte, so Span) []edit {
	var edits []edit
	found, members := false, 0
	_, _ = ScanObject(b, so.Start, false, func(key []byte, v Span) error {
		members++
		if KeyIs(key, "include_usage") {
			found = true
			if string(v.bytes(b)) != "true" {
				edits = append(edits, edit{v.Start, v.End, []byte("true")})
			}
		}
		return nil
	})
	if !found {
		text := []byte(`"include_usage":true,`)
		if members == 0 {
			text = text[:len(text)-1]
		}
		edits = append(edits, edit{so.Start + 1, so.Start + 1, text})
	}
	return edits
}

func sortEdits(e []edit) {
	// insertion sort: at most a handful of edits
	for i := 1; i < len(e); i++ {
		for j := i; j > 0 && e[j].start < e[j-1].start; j-- {
			e[j], e[j-1] = e[j-1], e[j]
		}
	}
}

// Response reads the usage of a complete JSON response and names the
// client's model; the rest of the body passes unchanged (the same slice when
// the model already is the client's).
func (o *openAIFormat) Response(body []byte) ([]byte, kernel.Usage, error) {
	v, m, err := usageAndModel(body)
	if err != nil {
		return body, kernel.Usage{}, err
	}
	u, ok := parseOpenAIUsage(body, v)
	body = o.model.body(body, m)
	if !ok {
		return body, kernel.Usage{}, errNoUsage
	}
	return body, u.kernel(), nil
}

// StreamChunk reads usage and text from OpenAI's SSE events. The bytes pass
// unchanged but for the model, renamed to the client's, and the usage event
// when the client did not ask for it.
func (o *openAIFormat) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	if o.ed.fn == nil {
		o.ed.fn, o.ed.inPlace = o.event, o.model.inPlace
		o.ed.active = o.strip || o.model.active()
	}
	out, err := o.ed.feed(chunk, eos)
	if !o.strip && !o.model.active() {
		o.ed.stop()
	}
	return out, err
}

var doneData = []byte("[DONE]")

func (o *openAIFormat) event(ev SSEEvent) eventAction {
	drop := o.usage.observe(ev.Data)
	if o.strip && drop {
		return eventAction{drop: true}
	}
	at, with := o.model.event(ev.Data)
	return eventAction{at: at, with: with}
}

// StreamUsage is the usage reported by the stream, or an estimate of the output
// from the streamed text.
func (o *openAIFormat) StreamUsage() (kernel.Usage, bool) { return o.usage.result() }

// Error converts an OpenAI-format error body into OpenAI's error shape.
func (o *openAIFormat) Error(status int, body []byte) []byte {
	return upstreamOpenAIError(status, body, o.apiKey).OpenAIBody()
}

// joinPath joins a base path ("/v1", "v1/", "") and an operation path.
func joinPath(base, op string) string {
	for len(base) > 0 && base[len(base)-1] == '/' {
		base = base[:len(base)-1]
	}
	if base != "" && base[0] != '/' {
		base = "/" + base
	}
	return base + op
}

// azurePath is Azure OpenAI's deployment path for an operation.
func azurePath(t *Target, op openAIOp) string {
	v := t.APIVersion
	if v == "" {
		v = defaultAzureAPIVersion
	}
	base := t.BasePath
	if base == "" {
		base = "/openai"
	}
	return joinPath(base, "/deployments/"+url.PathEscape(t.ProviderModel)+op.path) +
		"?api-version=" + url.QueryEscape(v)
}

// defaultAzureAPIVersion is used when a deployment has no APIVersion: the
// latest GA version of Azure OpenAI's data-plane inference API that accepts
// stream_options and max_completion_tokens.
const defaultAzureAPIVersion = "2024-10-21"

// openAIUpstream is the path and credentials of an operation on an
// OpenAI-compatible deployment (base path + operation, bearer key) or, with
// azure, on an Azure OpenAI deployment
// (/openai/deployments/{deployment}/{op}?api-version=..., api-key header).
func openAIUpstream(t *Target, op openAIOp, azure bool) (path string, headers [][2]string) {
	if azure {
		if t.APIKey != "" {
			headers = [][2]string{{HdrAPIKey, t.APIKey}}
		}
		return azurePath(t, op), headers
	}
	if t.APIKey != "" {
		headers = [][2]string{{HdrAuthorization, "Bearer " + t.APIKey}}
	}
	return joinPath(t.BasePath, op.path), headers
}

// request builds the upstream request of an OpenAI-format deployment. Azure
// takes the model from the path and ignores the body's model, which is
// renamed all the same so logs upstream match.
func (o *openAIFormat) request(in *Inbound, t *Target, op openAIOp, azure bool) *Outbound {
	o.apiKey = t.APIKey
	out := &Outbound{Body: o.rewrite(in, op, t.ProviderModel)}
	out.Path, out.Headers = openAIUpstream(t, op, azure)
	return out
}

// openAIRequest builds the upstream request of an OpenAI-compatible provider.
func (o *openAIFormat) openAIRequest(in *Inbound, t *Target, op openAIOp) *Outbound {
	return o.request(in, t, op, false)
}

// azureRequest builds the upstream request of an Azure OpenAI deployment.
func (o *openAIFormat) azureRequest(in *Inbound, t *Target, op openAIOp) *Outbound {
	return o.request(in, t, op, true)
}
