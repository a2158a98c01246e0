package extproc

import "github.com/tollgate-ai/tollgate/kernel"

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
// reported it (as settle does).
func (s *stream) checkpoint() {
	u, reported := s.tr.StreamUsage()
	if !reported && u.Input+u.CachedInput+u.CacheWrite == 0 {
		u.Input = s.inputEstimate()
	}
	s.p.cp.Checkpoint(s.id, u)
}
