package translate

// The text of one event of a client's stream, for the stream guardrails'
// redactor: where each API puts a text delta (OpenAI chat and completions,
// Responses output_text deltas, Anthropic text deltas, Gemini parts).

// StreamText locates the text of one streamed event of api: the content of a
// JSON string (its escapes kept). ok is false for events carrying no text
// delta.
func StreamText(api API, data []byte) (Span, bool) {
	var path []string
	switch api {
	case APIChat:
		path = []string{"choices", "[0]", "delta", "content"}
	case APICompletions:
		path = []string{"choices", "[0]", "text"}
	case APIResponses:
		if !typeIs(data, "response.output_text.delta") {
			return Span{Start: -1, End: -1}, false
		}
		path = []string{"delta"}
	case APIMessages:
		if !typeIs(data, "content_block_delta") {
			return Span{Start: -1, End: -1}, false
		}
		path = []string{"delta", "text"}
	case APIGeminiGenerate:
		path = []string{"candidates", "[0]", "content", "parts", "[0]", "text"}
	default:
		return Span{Start: -1, End: -1}, false
	}
	v := jsonPath(data, path)
	if !v.OK() || data[v.Start] != '"' {
		return Span{Start: -1, End: -1}, false
	}
	return Span{Start: v.Start + 1, End: v.End - 1}, true
}

// typeIs reports whether the event's top-level "type" is want.
func typeIs(data []byte, want string) bool {
	v := jsonPath(data, []string{"type"})
	return v.OK() && string(data[v.Start:v.End]) == `"`+want+`"`
}

// jsonPath finds the value at path ("[0]" is an array's first element).
func jsonPath(data []byte, path []string) Span {
	cur := Span{Start: SkipSpace(data, 0), End: len(data)}
	for _, step := range path {
		if cur.Start >= len(data) {
			return Span{Start: -1, End: -1}
		}
		if step == "[0]" {
			if data[cur.Start] != '[' {
				return Span{Start: -1, End: -1}
			}
			i := SkipSpace(data, cur.Start+1)
			if i >= len(data) || data[i] == ']' {
				return Span{Start: -1, End: -1}
			}
			e, err := SkipValue(data, i, 1)
			if err != nil {
				return Span{Start: -1, End: -1}
			}
			cur = Span{Start: i, End: e}
			continue
		}
		if data[cur.Start] != '{' {
			return Span{Start: -1, End: -1}
		}
		next := Span{Start: -1, End: -1}
		_, err := ScanObject(data, cur.Start, false, func(key []byte, v Span) error {
			if !next.OK() && KeyIs(key, step) {
				next = v
			}
			return nil
		})
		if err != nil || !next.OK() {
			return Span{Start: -1, End: -1}
		}
		cur = next
	}
	return cur
}
