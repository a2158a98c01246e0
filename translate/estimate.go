package translate

import (
	"bytes"
	"strings"
)

// Prompt-size and reasoning estimates read from a client's request, for the
// processor's reservation (the input estimated when a provider reports no
// usage) and its usage checkpoints (whether a stream shows all it is
// billed). Tokens are estimated from bytes by EstimateTokens.

// PromptTextBytes estimates the bytes of the prompt's text in a request: the
// string values of the text members anywhere in the body (message contents,
// text blocks, tool call arguments; see TextBytes), the top-level system
// prompt, prompt, input and instructions when they are strings (their text
// blocks and string arrays are counted by TextBytes or below), and the tool
// definitions' JSON. Model name, roles, ids and the JSON around them are not
// counted: the provider does not bill them as prompt text.
func PromptTextBytes(in *Inbound) int64 {
	if in == nil {
		return 0
	}
	b := in.Body
	n := TextBytes(b)
	f := in.Fields
	if f == nil {
		return n
	}
	for _, v := range [...]Span{f.System, f.Prompt, f.Input, f.Instructions} {
		if !v.OK() {
			continue
		}
		switch b[v.Start] {
		case '"':
			n += int64(v.End - v.Start - 2)
		case '[':
			n += stringElementBytes(b, v)
		}
	}
	if f.Tools.OK() && !f.Tools.IsNull(b) {
		n += int64(f.Tools.End - f.Tools.Start)
	}
	return n
}

// stringElementBytes is the bytes of the string elements of the JSON array at
// v (a prompt or input given as a list of strings); other elements are
// skipped (their text members are counted by TextBytes).
func stringElementBytes(b []byte, v Span) int64 {
	var n int64
	i := SkipSpace(b, v.Start+1)
	for i < v.End && b[i] != ']' {
		end, err := SkipValue(b, i, 1)
		if err != nil {
			return n
		}
		if b[i] == '"' {
			n += int64(end - i - 2)
		}
		i = SkipSpace(b, end)
		if i < v.End && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return n
}

// reasoningKeys are request members that turn reasoning on or tune it
// (OpenAI reasoning_effort and Responses reasoning, Anthropic and Bedrock
// thinking, Gemini thinkingConfig). Matching them anywhere in the body may
// also match a prompt's text: that only keeps the worst case.
var reasoningKeys = [][]byte{[]byte(`"reasoning`), []byte(`"thinking`)}

// nonReasoningModels are upstream model families that never reason unless the
// request asks (reasoningKeys): what they bill is what they stream. Any other
// model may reason without streaming it (OpenAI's o-series and GPT-5, Gemini
// 2.5 and later, unknown names, Azure deployment names), so a checkpoint of
// it could be below the bill.
var nonReasoningModels = []string{"gpt-4o", "gpt-4.1", "gpt-4-", "gpt-3.5", "chatgpt-4o", "gemini-1.", "gemini-2.0"}

// ReasoningAsked reports whether a request body turns reasoning on or tunes
// it (reasoningKeys).
func ReasoningAsked(body []byte) bool {
	for _, k := range reasoningKeys {
		if bytes.Contains(body, k) {
			return true
		}
	}
	return false
}

// MayReason reports whether the upstream model may be billed for reasoning
// tokens it does not stream when the request does not ask for reasoning: a
// usage checkpoint of its stream is then no bound on what its provider bills
// (docs/operations.md, "Leases").
func MayReason(model string) bool {
	m := strings.ToLower(model)
	if strings.Contains(m, "claude") || m == "gpt-4" {
		return false // Claude thinks only when the request asks
	}
	for _, f := range nonReasoningModels {
		if strings.HasPrefix(m, f) {
			return false
		}
	}
	return true
}
