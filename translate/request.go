package translate

import (
	"fmt"
)

// requestFields are the top-level members of a request body the gateway reads
// or rewrites, located by one scan of the body (no full decode).
type requestFields struct {
	open                int  // offset of the top-level '{'
	empty               bool // the object has no members
	model               Span
	stream              Span
	maxTokens           Span
	maxCompletionTokens Span
	maxOutputTokens     Span // the Responses API's max_output_tokens
	messages            Span // chat and Messages: must be an array
	Input               Span // Responses: a string or an array
	user                Span
	streamOptions       Span
	metadata            Span // Anthropic's metadata (user_id)
	n, bestOf           Span // OpenAI's choices per request (chat, completions)
	// The prompt outside message contents, for the input estimate (extproc/estimate.go).
	System, Prompt, Instructions, Tools Span // and input, above
}

type fieldError struct {
	Field string
	Msg   string
}

func (e *fieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Msg) }

// ParsedRequest is an Inbound and its fields in one piece of memory: one
// allocation, or none where it lives in the request's pooled stream.
type ParsedRequest struct {
	in Inbound
	f  requestFields
}

// ParseRequest scans body, a JSON object, for the fields of requestFields and
// fills in the scalar ones; the Inbound keeps the fields located.
func ParseRequest(api API, body []byte) (*Inbound, error) {
	return ParseRequestInto(new(ParsedRequest), api, body)
}

// ParseRequestInto is parseRequest into x, which it overwrites.
func ParseRequestInto(x *ParsedRequest, api API, body []byte) (*Inbound, error) {
	*x = ParsedRequest{}
	f := &x.f
	*f = requestFields{
		model: absent, stream: absent, maxTokens: absent, maxCompletionTokens: absent,
		user: absent, streamOptions: absent, metadata: absent, n: absent, bestOf: absent,
		System: absent, Prompt: absent, Input: absent, Instructions: absent, Tools: absent,
		maxOutputTokens: absent, messages: absent,
	}
	f.open = SkipSpace(body, 0)
	members := 0
	var dup error // reported after the whole body is known to be valid JSON
	set := func(dst *Span, name string, v Span) {
		if !dst.OK() {
			*dst = v
		} else if dup == nil {
			dup = &fieldError{name, "appears more than once"}
		}
	}
	_, err := ScanObject(body, 0, true, func(key []byte, v Span) error {
		members++
		switch {
		case KeyIs(key, "model"):
			set(&f.model, "model", v)
		case KeyIs(key, "stream"):
			set(&f.stream, "stream", v)
		case KeyIs(key, "max_tokens"):
			set(&f.maxTokens, "max_tokens", v)
		case KeyIs(key, "max_completion_tokens"):
			set(&f.maxCompletionTokens, "max_completion_tokens", v)
		case KeyIs(key, "user"):
			set(&f.user, "user", v)
		case KeyIs(key, "stream_options"):
			set(&f.streamOptions, "stream_options", v)
		case KeyIs(key, "metadata"):
			set(&f.metadata, "metadata", v)
		case KeyIs(key, "n"):
			set(&f.n, "n", v)
		case KeyIs(key, "best_of"):
			set(&f.bestOf, "best_of", v)
		case KeyIs(key, "system"):
			f.System = v
		case KeyIs(key, "prompt"):
			f.Prompt = v
		case KeyIs(key, "instructions"):
			f.Instructions = v
		case KeyIs(key, "tools"):
			f.Tools = v
		case KeyIs(key, "max_output_tokens"):
			set(&f.maxOutputTokens, "max_output_tokens", v)
		case KeyIs(key, "messages"):
			set(&f.messages, "messages", v)
		case KeyIs(key, "input"):
			set(&f.Input, "input", v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if dup != nil {
		return nil, dup
	}
	f.empty = members == 0
	in := &x.in
	in.API, in.Body, in.Fields = api, body, f
	if f.model.OK() && !f.model.IsNull(body) {
		s, ok := StringValue(body, f.model)
		if !ok {
			return nil, &fieldError{"model", "must be a string"}
		}
		in.Model = s
	}
	if f.stream.OK() {
		switch string(f.stream.bytes(body)) {
		case "true":
			in.Stream = true
		case "false", "null":
		default:
			return nil, &fieldError{"stream", "must be a boolean"}
		}
	}
	for _, m := range []struct {
		name string
		s    Span
	}{{"max_tokens", f.maxTokens}, {"max_completion_tokens", f.maxCompletionTokens}, {"max_output_tokens", f.maxOutputTokens}} {
		if !m.s.OK() || m.s.IsNull(body) {
			continue
		}
		n, ok := intValue(body, m.s)
		if !ok {
			return nil, &fieldError{m.name, "must be a non-negative integer"}
		}
		// max_completion_tokens supersedes max_tokens in OpenAI's chat API;
		// max_output_tokens is the Responses API's only bound.
		if m.name != "max_tokens" || in.MaxTokens == 0 {
			in.MaxTokens = n
		}
	}
	if err := checkShapes(api, body, f); err != nil {
		return nil, err
	}
	if f.user.OK() && !f.user.IsNull(body) {
		s, ok := StringValue(body, f.user)
		if !ok {
			return nil, &fieldError{"user", "must be a string"}
		}
		in.User = s
	}
	if f.streamOptions.isObject(body) {
		_, _ = ScanObject(body, f.streamOptions.Start, false, func(key []byte, v Span) error {
			if KeyIs(key, "include_usage") {
				in.IncludeUsage = string(v.bytes(body)) == "true"
			}
			return nil
		})
	}
	if in.User == "" && f.metadata.isObject(body) {
		// Anthropic: metadata.user_id identifies the end user.
		_, _ = ScanObject(body, f.metadata.Start, false, func(key []byte, v Span) error {
			if KeyIs(key, "user_id") {
				if s, ok := StringValue(body, v); ok {
					in.User = s
				}
			}
			return nil
		})
	}
	return in, nil
}

// bodyFields returns the members located in in.Body, scanning it when in was
// not made by parseRequest.
func (in *Inbound) bodyFields() (*requestFields, error) {
	if in.Fields != nil {
		return in.Fields, nil
	}
	parsed, err := ParseRequest(in.API, in.Body)
	if err != nil {
		return nil, err
	}
	return parsed.Fields, nil
}

// bodyEdits collects the edits of a request body: replaced values, and members
// added at the start of the top-level object.
type bodyEdits struct {
	edits   []edit
	inserts []byte // the added members, each followed by a comma
}

// replace replaces the value at s with text.
func (e *bodyEdits) replace(s Span, text []byte) {
	e.edits = append(e.edits, edit{s.Start, s.End, text})
}

// add adds the member name: value.
func (e *bodyEdits) add(name string, value []byte) {
	e.inserts = appendJSONString(e.inserts, name)
	e.inserts = append(e.inserts, ':')
	e.inserts = append(e.inserts, value...)
	e.inserts = append(e.inserts, ',')
}

// apply returns b, whose members f locates, with the edits made; nil when
// there are none.
func (e *bodyEdits) apply(b []byte, f *requestFields) []byte {
	edits := e.edits
	if len(e.inserts) > 0 {
		ins := e.inserts
		if f.empty {
			ins = ins[:len(ins)-1] // no trailing comma in an empty object
		}
		edits = append(edits, edit{f.open + 1, f.open + 1, ins})
	}
	if len(edits) == 0 {
		return nil
	}
	sortEdits(edits)
	return applyEdits(b, edits)
}

// checkShapes refuses, with the gateway's own 400 naming the member, the
// members whose JSON type is wrong for the API (a provider would answer with
// its own error text, or worse, accept it).
func checkShapes(api API, body []byte, f *requestFields) error {
	switch api {
	case APIChat, APIMessages, APIMessagesCount:
		if f.messages.OK() && body[f.messages.Start] != '[' {
			return &fieldError{"messages", "must be an array of messages"}
		}
	case APIResponses:
		if f.Input.OK() && body[f.Input.Start] != '[' && body[f.Input.Start] != '"' {
			return &fieldError{"input", "must be a string or an array of input items"}
		}
	}
	return nil
}

// Choices is how many completions the request makes the provider generate,
// and bill: max(n, best_of), at least 1. Only OpenAI's chat and completions
// APIs have them; Anthropic's Messages and OpenAI's Responses API generate
// one completion per request.
func (in *Inbound) Choices() (int64, error) {
	if in.API != APIChat && in.API != APICompletions || in.Fields == nil {
		return 1, nil
	}
	c := int64(1)
	for _, m := range [...]struct {
		name string
		s    Span
	}{{"n", in.Fields.n}, {"best_of", in.Fields.bestOf}} {
		if !m.s.OK() || m.s.IsNull(in.Body) {
			continue
		}
		v, ok := intValue(in.Body, m.s)
		if !ok || v < 1 || v > maxChoices {
			return 0, &fieldError{m.name, "must be an integer from 1 to 128"}
		}
		c = max(c, v)
	}
	return c, nil
}

// maxChoices bounds n and best_of (OpenAI accepts at most 128 choices).
const maxChoices = 128
