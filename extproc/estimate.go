package extproc

// promptTextBytes estimates the bytes of the prompt's text in a request: the
// string values of the text members anywhere in the body (message contents,
// text blocks, tool call arguments; see textBytes), the top-level system
// prompt, prompt, input and instructions when they are strings (their text
// blocks and string arrays are counted by textBytes or below), and the tool
// definitions' JSON. Model name, roles, ids and the JSON around them are not
// counted: the provider does not bill them as prompt text.
func promptTextBytes(in *Inbound) int64 {
	if in == nil {
		return 0
	}
	b := in.Body
	n := textBytes(b)
	f := in.fields
	if f == nil {
		return n
	}
	for _, v := range [...]span{f.system, f.prompt, f.input, f.instructions} {
		if !v.ok() {
			continue
		}
		switch b[v.start] {
		case '"':
			n += int64(v.end - v.start - 2)
		case '[':
			n += stringElementBytes(b, v)
		}
	}
	if f.tools.ok() && !f.tools.isNull(b) {
		n += int64(f.tools.end - f.tools.start)
	}
	return n
}

// stringElementBytes is the bytes of the string elements of the JSON array at
// v (a prompt or input given as a list of strings); other elements are
// skipped (their text members are counted by textBytes).
func stringElementBytes(b []byte, v span) int64 {
	var n int64
	i := skipSpace(b, v.start+1)
	for i < v.end && b[i] != ']' {
		end, err := skipValue(b, i, 1)
		if err != nil {
			return n
		}
		if b[i] == '"' {
			n += int64(end - i - 2)
		}
		i = skipSpace(b, end)
		if i < v.end && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return n
}

// inputEstimate is the input charged when the provider reported no usage:
// ceil(prompt text / 4) tokens, or the whole body's bytes / 4 when the
// estimate found no text (a prompt of images or files only).
func (s *stream) inputEstimate() int64 {
	if s.promptText > 0 {
		return estimateTokens(s.promptText)
	}
	return estimateTokens(s.promptBytes)
}

// releaseBody lets go of the client's body once its message is handled: the
// prompt text is counted (promptTextBytes) and the upstream body built while
// the body is in hand, and nothing later reads it. The body is the client's
// buffer (on the in-process transport, the data plane's): kept, it doubled
// the memory of a large request while it went upstream.
func (s *stream) releaseBody() {
	if s.in != nil {
		s.in.Body, s.in.fields = nil, nil
	}
}
