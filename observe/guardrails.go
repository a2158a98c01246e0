package observe

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-ai/tollgate/extproc"
)

// newGuardrails makes the guardrails' counter.
func (m *Metrics) newGuardrails() *prometheus.CounterVec {
	m.guards = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "tollgate_guardrail_interventions_total",
		Help: "Guardrail interventions, by guardrail, kind, action taken (block, redact, log), stage (pre, post, stream) and failed (\"true\" when an external check failed and the guardrail failed open or closed).",
	}, []string{"guardrail", "kind", "action", "stage", "failed"})
	return m.guards
}

func (m *Metrics) observeGuardrails(r *extproc.Report) {
	for _, g := range r.Guardrails {
		m.guards.WithLabelValues(g.Guardrail, g.Kind, g.Action, g.Stage, strconv.FormatBool(g.Failed)).Inc()
	}
}
