package translate

import (
	"bytes"

	"github.com/tollgate-ai/tollgate/kernel"
)

// openAIUsage is OpenAI's usage object as reported (tokens overlap: prompt
// includes cached, completion includes reasoning).
type openAIUsage struct {
	prompt, completion, cached, reasoning int64
}

// kernel normalises the usage into disjoint kinds.
func (u openAIUsage) kernel() kernel.Usage {
	cached := min(u.cached, u.prompt)
	reasoning := min(u.reasoning, u.completion)
	return kernel.Usage{
		Input:       u.prompt - cached,
		CachedInput: cached,
		Output:      u.completion - reasoning,
		Reasoning:   reasoning,
	}
}

// usageNames are the member names of an OpenAI usage object.
type usageNames struct {
	prompt, completion, promptDetails, completionDetails string
}

var (
	// chatUsageNames: chat, completions and embeddings.
	chatUsageNames = usageNames{"prompt_tokens", "completion_tokens", "prompt_tokens_details", "completion_tokens_details"}
	// responsesUsageNames: the Responses API.
	responsesUsageNames = usageNames{"input_tokens", "output_tokens", "input_tokens_details", "output_tokens_details"}
)

// parseOpenAIUsage reads the usage object at v (chat, completions and
// embeddings share its shape: prompt_tokens, completion_tokens,
// prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens).
// ok=false when v is absent, null or not an object.
func parseOpenAIUsage(b []byte, v Span) (u openAIUsage, ok bool) {
	return parseUsageNamed(b, v, &chatUsageNames)
}

// parseUsageNamed reads a usage object whose members are named by n.
func parseUsageNamed(b []byte, v Span, n *usageNames) (u openAIUsage, ok bool) {
	if !v.isObject(b) {
		return u, false
	}
	detail := func(v Span, name string) (n int64) {
		if !v.isObject(b) {
			return 0
		}
		_, _ = ScanObject(b, v.Start, false, func(key []byte, v Span) error {
			if KeyIs(key, name) {
				n, _ = intValue(b, v)
			}
			return nil
		})
		return n
	}
	_, err := ScanObject(b, v.Start, false, func(key []byte, v Span) error {
		switch {
		case KeyIs(key, n.prompt):
			u.prompt, _ = intValue(b, v)
		case KeyIs(key, n.completion):
			u.completion, _ = intValue(b, v)
		case KeyIs(key, n.promptDetails):
			u.cached = detail(v, "cached_tokens")
		case KeyIs(key, n.completionDetails):
			u.reasoning = detail(v, "reasoning_tokens")
		}
		return nil
	})
	return u, err == nil
}

// openAIStreamUsage accumulates the usage of an OpenAI SSE stream: the usage
// chunk's when the provider reports one, else the generated text for an
// estimate.
type openAIStreamUsage struct {
	usage    openAIUsage
	reported bool
	text     int64 // generated text bytes seen in the stream
}

var usageKey = []byte(`"usage"`)

// observe takes usage and text from one event's data; it reports whether the
// event is the usage-only one (empty choices, usage set).
func (s *openAIStreamUsage) observe(data []byte) bool {
	if bytes.Equal(data, doneData) {
		return false
	}
	s.text += TextBytes(data)
	if usageAllNull(data) {
		// No usage, or "usage":null as on every chunk but the last of a
		// stream with include_usage: nothing to parse.
		return false
	}
	return s.parseUsage(data)
}

// parseUsage takes the usage of one event's data; it reports whether the
// event is the usage-only one.
func (s *openAIStreamUsage) parseUsage(data []byte) bool {
	usage, choices := absent, absent
	_, err := ScanObject(data, 0, true, func(key []byte, v Span) error {
		switch {
		case KeyIs(key, "usage"):
			usage = v
		case KeyIs(key, "choices"):
			choices = v
		}
		return nil
	})
	if err != nil {
		return false
	}
	u, ok := parseOpenAIUsage(data, usage)
	if !ok {
		return false
	}
	s.usage, s.reported = u, true
	return choices.OK() && isEmptyArray(data, choices)
}

// usageAllNull reports whether every "usage" key in data has the value
// null (or there is none). A "usage" key cannot occur inside a JSON string:
// its quotes would be escaped.
func usageAllNull(data []byte) bool {
	rest := data
	for {
		i := bytes.Index(rest, usageKey)
		if i < 0 {
			return true
		}
		rest = rest[i+len(usageKey):]
		j := SkipSpace(rest, 0)
		if j >= len(rest) || rest[j] != ':' {
			return false // not a key as expected: let the scanner decide
		}
		j = SkipSpace(rest, j+1)
		if !bytes.HasPrefix(rest[j:], nullValue) {
			return false
		}
		rest = rest[j+len(nullValue):]
	}
}

var nullValue = []byte("null")

func isEmptyArray(b []byte, v Span) bool {
	return b[v.Start] == '[' && b[SkipSpace(b, v.Start+1)] == ']'
}

// result is the usage reported by the stream, or an estimate of the output
// from the streamed text.
func (s *openAIStreamUsage) result() (kernel.Usage, bool) {
	if s.reported {
		return s.usage.kernel(), true
	}
	return kernel.Usage{Output: EstimateTokens(s.text)}, false
}

// TopLevelMember returns the span of the named member of the JSON object b.
func TopLevelMember(b []byte, name string) (Span, error) {
	found := absent
	_, err := ScanObject(b, 0, true, func(key []byte, v Span) error {
		if KeyIs(key, name) {
			found = v
		}
		return nil
	})
	return found, err
}

// EstimateTokens is the token estimate of n bytes of text (4 bytes a token,
// rounded up).
func EstimateTokens(n int64) int64 { return (n + 3) / 4 }
