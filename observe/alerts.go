package observe

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Alert metrics: the alerts this replica fired (it won the alert's claim)
// and their deliveries to each sink. The gateway passes Metrics to the
// alert notifier as its observer (alert.Observer).

type alertMetrics struct {
	fired      *prometheus.CounterVec
	deliveries *prometheus.CounterVec
}

func newAlertMetrics(reg prometheus.Registerer) alertMetrics {
	a := alertMetrics{
		fired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_alerts_fired_total",
			Help: "Alerts fired by this replica (each alert fires on one replica only), by kind: budget_threshold, key_expiring, spend_anomaly.",
		}, []string{"kind"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_alert_deliveries_total",
			Help: "Deliveries of alerts to sinks, by sink, alert kind and ok (\"false\" when the sink gave up after its retries).",
		}, []string{"sink", "kind", "ok"}),
	}
	reg.MustRegister(a.fired, a.deliveries)
	return a
}

// AlertFired counts an alert this replica fired.
func (m *Metrics) AlertFired(kind string) { m.alertM.fired.WithLabelValues(kind).Inc() }

// AlertDelivered counts one alert's delivery to one sink.
func (m *Metrics) AlertDelivered(sink, kind string, ok bool) {
	m.alertM.deliveries.WithLabelValues(sink, kind, strconv.FormatBool(ok)).Inc()
}
