package observe

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAlertsCounted(t *testing.T) {
	m := NewMetrics()
	m.AlertFired("budget_threshold")
	m.AlertFired("budget_threshold")
	m.AlertFired("spend_anomaly")
	m.AlertDelivered("finance", "budget_threshold", true)
	m.AlertDelivered("finance", "budget_threshold", false)
	m.AlertDelivered("ops", "spend_anomaly", true)
	fams, err := m.reg.Gather()
	require.NoError(t, err)
	// "name/label values sorted by label name" → value.
	series := map[string]float64{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "tollgate_alert") {
			continue
		}
		for _, mt := range f.GetMetric() {
			l := []string{f.GetName()}
			for _, lp := range mt.GetLabel() {
				l = append(l, lp.GetValue())
			}
			series[strings.Join(l, "/")] = mt.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{
		"tollgate_alerts_fired_total/budget_threshold":                   2,
		"tollgate_alerts_fired_total/spend_anomaly":                      1,
		"tollgate_alert_deliveries_total/budget_threshold/true/finance":  1, // kind, ok, sink
		"tollgate_alert_deliveries_total/budget_threshold/false/finance": 1,
		"tollgate_alert_deliveries_total/spend_anomaly/true/ops":         1,
	}, series)
}
