package extproc

import (
	"bytes"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

// promptTextBytes estimates the bytes of the prompt's text in a request: the
// string values of the text members anywhere in the body (message contents,
// text blocks, tool call arguments; see textBytes), the top-level system
// prompt, prompt, input and instructions when they are strings (their text
// blocks and string arrays are counted by textBytes or below), and the tool
// definitions' JSON. Model name, roles, ids and the JSON around them are not
// counted: the provider does not bill them as prompt text.
func promptTextBytes(in *translate.Inbound) int64 {
	if in == nil {
		return 0
	}
	b := in.Body
	n := translate.TextBytes(b)
	f := in.Fields
	if f == nil {
		return n
	}
	for _, v := range [...]translate.Span{f.System, f.Prompt, f.Input, f.Instructions} {
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
// skipped (their text members are counted by textBytes).
func stringElementBytes(b []byte, v translate.Span) int64 {
	var n int64
	i := translate.SkipSpace(b, v.Start+1)
	for i < v.End && b[i] != ']' {
		end, err := translate.SkipValue(b, i, 1)
		if err != nil {
			return n
		}
		if b[i] == '"' {
			n += int64(end - i - 2)
		}
		i = translate.SkipSpace(b, end)
		if i < v.End && b[i] == ',' {
			i = translate.SkipSpace(b, i+1)
		}
	}
	return n
}

// inputEstimate is the input charged when the provider reported no usage:
// ceil(prompt text / 4) tokens, or the whole body's bytes / 4 when the
// estimate found no text (a prompt of images or files only).
func (s *stream) inputEstimate() int64 {
	if n, ok := s.unitEstimate(); ok { // units.go: the units reserved
		return n
	}
	if s.promptText > 0 {
		return translate.EstimateTokens(s.promptText)
	}
	return translate.EstimateTokens(s.promptBytes)
}

// releaseBody lets go of the client's body once its message is handled: the
// prompt text is counted (promptTextBytes) and the upstream body built while
// the body is in hand, and nothing later reads it. The body is the client's
// buffer (on the in-process transport, the data plane's): kept, it doubled
// the memory of a large request while it went upstream.
func (s *stream) releaseBody() {
	if s.in != nil {
		s.in.Body, s.in.Fields = nil, nil
	}
}

// reserveChoices makes req's output bound cover every choice: the provider
// bills each of them up to max_tokens (or the default bound).
func reserveChoices(req *kernel.AdmitRequest, choices int64) {
	if choices <= 1 {
		return
	}
	if req.MaxTokens <= 0 && req.DefaultMaxTokens <= 0 {
		req.DefaultMaxTokens = kernel.DefaultOutputBound
	}
	req.MaxTokens = satMul(req.MaxTokens, choices)
	req.DefaultMaxTokens = satMul(req.DefaultMaxTokens, choices)
}

// perChoice is the max_tokens each choice may use when the kernel reserved
// for bound output tokens in all: bound / choices, rounded down.
func perChoice(bound, choices int64) int64 { return bound / max(choices, 1) }

func satMul(a, b int64) int64 {
	if a <= 0 {
		return a
	}
	if a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}

// budgetRefusal is the decision for a budget that affords less than one
// output token per choice.
func budgetRefusal(scopes []kernel.Scope) kernel.Decision {
	d := kernel.Decision{Reason: kernel.ReasonBudgetExceeded}
	if len(scopes) > 0 {
		d.Scope = scopes[0].Ref
	}
	return d
}

// UsageCheckpointer keeps, for each open stream, the usage it would be charged
// were it cut now, so that a reservation whose replica died is settled from
// what the stream showed rather than its worst case (accounting.Accountant:
// memory at every chunk, written to Redis every interval).
type UsageCheckpointer interface {
	Checkpoint(id string, u kernel.Usage)
}

// WithCheckpoints makes the processor tell c, at every chunk of a stream, the
// usage the stream has shown so far (nil: none).
func WithCheckpoints(c UsageCheckpointer) Option { return func(p *Processor) { p.cp = c } }

// checkpoint tells the checkpointer what an abort now would charge: the
// stream's usage so far with the input estimated when the provider has not
// reported it (as settle does). A stream that may hide reasoning is never
// checkpointed, so its expiry keeps the worst case: its provider bills
// tokens it does not stream (reasoningAsked, mayReason).
func (s *stream) checkpoint() {
	if s.ckReasoning == 0 {
		s.ckReasoning = 1
		if s.target == nil || mayReason(s.target.ProviderModel) {
			s.ckReasoning = 2
		}
	}
	if s.ckReasoning == 2 {
		return
	}
	u, reported := s.tr.StreamUsage()
	if !reported && u.Input+u.CachedInput+u.CacheWrite == 0 {
		u.Input = s.inputEstimate()
	}
	s.p.cp.Checkpoint(s.id, u)
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

// reasoningAsked reports whether a request body turns reasoning on or tunes
// it (reasoningKeys).
func reasoningAsked(body []byte) bool {
	for _, k := range reasoningKeys {
		if bytes.Contains(body, k) {
			return true
		}
	}
	return false
}

// mayReason reports whether the upstream model may be billed for reasoning
// tokens it does not stream when the request does not ask for reasoning: a
// usage checkpoint of its stream is then no bound on what its provider bills
// (docs/operations.md, "Leases").
func mayReason(model string) bool {
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
