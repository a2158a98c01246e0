package translate

import (
	"github.com/tollgate-ai/tollgate/kernel"
)

// opResponses is the Responses API's operation: it has no stream_options
// (usage always comes in response.completed) and bounds output with
// max_output_tokens.
var opResponses = openAIOp{path: "/responses", maxTokensKey: "max_output_tokens"}

// responsesNative serves the Responses API from an upstream that speaks it
// (OpenAI, Azure OpenAI's v1 API at /openai/v1/responses, an OpenAI-compatible
// server that declares it): the body passes with the model renamed and
// max_output_tokens clamped; previous_response_id, store and everything else
// pass through. Usage is read from the response's usage member, or from the
// response of the stream's response.completed (response.incomplete,
// response.failed) event.
type responsesNative struct {
	azure  bool
	apiKey string
	usage  responsesStreamUsage
	// stream names the client's model in the reply (reply_model.go); model
	// renames the JSON reply's.
	stream modelStream
	model  replyModel
}

var _ Translator = (*responsesNative)(nil)

// Request renames the model and clamps max_output_tokens.
func (t *responsesNative) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey = target.APIKey
	t.model = newReplyModel(in.Model, "response", false, in.ReplyInPlace)
	t.stream = modelStream{model: t.model, observe: t.usage.observe}
	var f openAIFormat
	out := &Outbound{Body: f.rewrite(in, opResponses, target.ProviderModel)}
	if t.azure {
		// Azure's v1 API: the deployment is the body's model, no api-version.
		base := target.BasePath
		if base == "" {
			base = "/openai"
		}
		out.Path = joinPath(base, "/v1/responses")
		if target.APIKey != "" {
			out.Headers = [][2]string{{HdrAPIKey, target.APIKey}}
		}
		return out, nil
	}
	out.Path, out.Headers = openAIUpstream(target, opResponses, false)
	return out, nil
}

// Response reads the usage of a response object and names the client's
// model; the rest of the body passes unchanged.
func (t *responsesNative) Response(body []byte) ([]byte, kernel.Usage, error) {
	v, m, err := usageAndModel(body)
	if err != nil {
		return body, kernel.Usage{}, err
	}
	u, ok := parseResponsesUsage(body, v)
	body = t.model.body(body, m)
	if !ok {
		return body, kernel.Usage{}, errNoUsage
	}
	return body, u.kernel(), nil
}

// StreamChunk reads the usage; the events pass unchanged but for the model of
// their response, renamed to the client's.
func (t *responsesNative) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	return t.stream.feed(chunk, eos)
}

// StreamUsage is the usage of the final event, or an estimate from the deltas.
func (t *responsesNative) StreamUsage() (kernel.Usage, bool) { return t.usage.result() }

// Error converts an upstream error into OpenAI's error shape.
func (t *responsesNative) Error(status int, body []byte) []byte {
	return upstreamOpenAIError(status, body, t.apiKey).OpenAIBody()
}

// parseResponsesUsage reads a Responses usage object (input_tokens,
// output_tokens, input_tokens_details.cached_tokens,
// output_tokens_details.reasoning_tokens) into OpenAI's overlapping counts.
func parseResponsesUsage(b []byte, v Span) (openAIUsage, bool) {
	return parseUsageNamed(b, v, &responsesUsageNames)
}

// responsesStreamUsage accumulates the usage of a Responses SSE stream: the
// usage of the final response event, else the delta text for an estimate.
type responsesStreamUsage struct {
	usage    openAIUsage
	reported bool
	text     int64
}

// observe reads one event: a *.delta event's delta counts as generated text;
// response.completed, response.incomplete and response.failed carry the usage.
func (s *responsesStreamUsage) observe(ev SSEEvent) {
	data := ev.Data
	var typ string
	delta, resp := absent, absent
	_, err := ScanObject(data, 0, true, func(key []byte, v Span) error {
		switch {
		case KeyIs(key, "type"):
			typ, _ = StringValue(data, v)
		case KeyIs(key, "delta"):
			delta = v
		case KeyIs(key, "response"):
			resp = v
		}
		return nil
	})
	if err != nil {
		return
	}
	switch typ {
	case "response.completed", "response.incomplete", "response.failed":
		if !resp.isObject(data) {
			return
		}
		_, _ = ScanObject(data, resp.Start, false, func(key []byte, v Span) error {
			if KeyIs(key, "usage") {
				if u, ok := parseResponsesUsage(data, v); ok {
					s.usage, s.reported = u, true
				}
			}
			return nil
		})
	default:
		if str, ok := StringValue(data, delta); ok {
			s.text += int64(len(str))
		}
	}
}

// result is the reported usage, or an estimate of the output.
func (s *responsesStreamUsage) result() (kernel.Usage, bool) {
	if s.reported {
		return s.usage.kernel(), true
	}
	return kernel.Usage{Output: EstimateTokens(s.text)}, false
}

// NativeResponses reports whether target serves the Responses API itself
// (Azure's v1 API, an OpenAI-compatible provider that declares it): the
// upstream then holds the response ids the gateway hands out.
func NativeResponses(target *Target) bool {
	return target.Provider == ProviderAzure || target.Provider == ProviderOpenAI && target.NativeResponses
}

// NativeResponsesRequest is the upstream path and credential headers of a
// request on a stored response of a native upstream: rest is what follows
// /v1/responses (or /v1/conversations when conversations) in the client's
// path, "/{id}", "/{id}/input_items?order=asc", "/{id}/cancel", …
func NativeResponsesRequest(target *Target, rest string, conversations bool) (path string, headers [][2]string) {
	res := "/responses"
	if conversations {
		res = "/conversations"
	}
	if target.Provider == ProviderAzure {
		base := target.BasePath
		if base == "" {
			base = "/openai"
		}
		if target.APIKey != "" {
			headers = [][2]string{{HdrAPIKey, target.APIKey}}
		}
		return joinPath(base, "/v1"+res) + rest, headers
	}
	path, headers = openAIUpstream(target, openAIOp{path: res}, false)
	return path + rest, headers
}

// ForwardedResponses is the translator of what a native upstream answers to
// a request the gateway forwards on one of its responses (GET
// /v1/responses/{id}, its stream, cancel): the reply passes with the name the
// client asked for, model, in place of the provider's (the JSON's model, each
// event's response.model), and its usage is read as for a POST. Its Request
// is never called.
func ForwardedResponses(model string) Translator {
	t := &responsesNative{model: newReplyModel(model, "response", false, false)}
	t.stream = modelStream{model: t.model, observe: t.usage.observe}
	return t
}
