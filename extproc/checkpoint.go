package extproc

import (
	"bytes"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
)

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
