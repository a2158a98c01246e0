package edge

import "github.com/tollgate-ai/tollgate/edge/extprocfilter"

// endCutStream ends a streamed response the upstream broke off after its
// headers went downstream: the processor is asked for a last event in the
// client's format (extprocfilter.Stream.ResponseReset), which is written
// before the response ends cleanly. False when there is none (no ext_proc on
// the route, not STREAMED, nothing answered): the caller then resets the
// client's stream, as Envoy does. On a per-try route the try's upstream
// filter is asked: it translated the reply and holds its usage, while the
// router-level stream saw no body.
func (x *exchange) endCutStream() bool {
	s := x.tryF
	if s == nil {
		var ok bool
		if s, ok = x.f.(*extprocfilter.Stream); !ok {
			return false
		}
	}
	res, err := s.ResponseReset(extprocfilter.DetailsUpstreamReset)
	if err != nil || res.Reset || res.LocalReply != nil || len(res.Body) == 0 {
		return false
	}
	if _, err := x.w.Write(res.Body); err != nil {
		return false
	}
	return true
}
