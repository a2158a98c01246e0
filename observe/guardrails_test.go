package observe

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
)

func TestGuardrailInterventionsCounted(t *testing.T) {
	m := NewMetrics()
	m.Observe(&extproc.Report{HTTPStatus: 400, ErrorType: "guardrail_blocked", Guardrails: []extproc.GuardReport{
		{Guardrail: "hook", Kind: "webhook", Action: "block", Stage: "pre", Failed: true},
	}})
	m.Observe(&extproc.Report{HTTPStatus: 200, Guardrails: []extproc.GuardReport{
		{Guardrail: "pii", Kind: "pii", Action: "redact", Stage: "pre"},
		{Guardrail: "pii", Kind: "pii", Action: "redact", Stage: "stream"},
	}})
	// The series as a scrape sees them: "guardrail/kind/action/stage/failed".
	fams, err := m.reg.Gather()
	require.NoError(t, err)
	series := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "tollgate_guardrail_interventions_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			var l []string
			for _, lp := range mt.GetLabel() {
				l = append(l, lp.GetValue())
			}
			series[strings.Join(l, "/")] = mt.GetCounter().GetValue()
		}
	}
	require.Len(t, series, 3)
	count := func(labels ...string) float64 {
		// Labels are gathered sorted by name: action, failed, guardrail, kind, stage.
		return series[strings.Join([]string{labels[2], labels[4], labels[0], labels[1], labels[3]}, "/")]
	}
	require.InDelta(t, 1, count("hook", "webhook", "block", "pre", "true"), 0)
	require.InDelta(t, 1, count("pii", "pii", "redact", "stream", "false"), 0)
	require.InDelta(t, 1, count("pii", "pii", "redact", "pre", "false"), 0)
}
