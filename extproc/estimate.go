package extproc

import (
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate"
)

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
// prompt text is counted (translate.PromptTextBytes) and the upstream body built while
// the body is in hand, and nothing later reads it. The body is the client's
// buffer (on the in-process transport, the data plane's): kept, it doubled
// the memory of a large request while it went upstream.
func (s *stream) releaseBody() {
	if s.in != nil {
		s.in.Body, s.in.Fields = nil, nil
	}
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
// tokens it does not stream (translate.ReasoningAsked, translate.MayReason).
func (s *stream) checkpoint() {
	if s.ckReasoning == 0 {
		s.ckReasoning = 1
		if s.target == nil || translate.MayReason(s.target.ProviderModel) {
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
