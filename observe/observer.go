package observe

import "github.com/tollgate-ai/tollgate/extproc"

// Join returns one Observer that reports to each of obs in order (nil ones
// skipped); it is also the Tracer when one of them is. Nil when none is left.
func Join(obs ...extproc.Observer) extproc.Observer {
	j := &joined{}
	for _, o := range obs {
		if o == nil {
			continue
		}
		j.obs = append(j.obs, o)
		if t, ok := o.(extproc.Tracer); ok && j.tracer == nil {
			j.tracer = t
		}
	}
	switch {
	case len(j.obs) == 0:
		return nil
	case j.tracer != nil:
		return &tracedJoin{j}
	case len(j.obs) == 1:
		return j.obs[0]
	default:
		return j
	}
}

type joined struct {
	obs    []extproc.Observer
	tracer extproc.Tracer
}

func (j *joined) Observe(r *extproc.Report) {
	for _, o := range j.obs {
		o.Observe(r)
	}
}

// tracedJoin is a joined that is a Tracer too.
type tracedJoin struct{ *joined }

var _ extproc.Tracer = (*tracedJoin)(nil)

func (j *tracedJoin) UpstreamTraceparent(r *extproc.Report) string {
	return j.tracer.UpstreamTraceparent(r)
}
