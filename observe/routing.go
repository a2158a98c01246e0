package observe

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-ai/tollgate/extproc"
)

// Routing metrics: cooldowns as the router starts them, retries and
// fallbacks from each request's report, and each deployment's state read
// from the router at scrape time. Every label is a configured name (model
// group, deployment) or a fixed reason, never the client's model name.

// Retry reasons: why the attempt that was sent again failed.
const (
	retryRateLimited = "rate_limited" // 429
	retryTimeout     = "timeout"      // 408, 504 (the data plane's timeouts included)
	retryServerError = "server_error" // other 5xx (the data plane's connect failures included)
	retryNoResponse  = "no_response"  // no response headers
	retryOther       = "other"        // any other status (e.g. a context-window 400)
)

// CooledDown implements extproc.CooldownObserver.
func (m *Metrics) CooledDown(deployment, reason string, _ time.Duration) {
	m.cooldowns.WithLabelValues(deployment, reason).Inc()
}

// observeRouting counts a request's retries and its fallback.
func (m *Metrics) observeRouting(r *extproc.Report) {
	if len(r.Tries) > 1 {
		for _, t := range r.Tries[:len(r.Tries)-1] {
			m.retries.WithLabelValues(t.Group, t.Deployment, retryReason(t.Status)).Inc()
		}
	}
	if t := r.RetryOf; t != nil {
		m.retries.WithLabelValues(t.Group, t.Deployment, retryReason(t.Status)).Inc()
	}
	if n := len(r.Tries); r.Retried && n > 0 { // per-try routing: this try is retried
		t := r.Tries[n-1]
		m.retries.WithLabelValues(t.Group, t.Deployment, retryReason(t.Status)).Inc()
	}
	if r.FallbackFrom != "" && r.Target != nil {
		m.fallbacks.WithLabelValues(r.FallbackFrom, r.Target.Model, r.FallbackReason).Inc()
	}
}

func retryReason(status int) string {
	switch {
	case status == 0:
		return retryNoResponse
	case status == http.StatusTooManyRequests:
		return retryRateLimited
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return retryTimeout
	case status >= 500:
		return retryServerError
	default:
		return retryOther
	}
}

// RouterStates is what WatchRouter reads: extproc.Router.
type RouterStates interface {
	States(now time.Time) map[string]extproc.DeploymentState
}

// WatchRouter exports the state of every deployment router has seen, read
// at every scrape (now is the clock cooldowns are compared with).
func (m *Metrics) WatchRouter(router RouterStates, now func() time.Time) {
	m.reg.MustRegister(&routerCollector{router: router, now: now})
}

type routerCollector struct {
	router RouterStates
	now    func() time.Time
}

var (
	descCoolingDown = prometheus.NewDesc("tollgate_deployment_cooling_down",
		"1 while the deployment is out of rotation (cooling down, by this replica's decision or another's), else 0.", []string{lblDeployment}, nil)
	descDepInFlight = prometheus.NewDesc("tollgate_deployment_requests_in_flight",
		"Requests this replica has in flight on the deployment.", []string{lblDeployment}, nil)
	descDepTTFB = prometheus.NewDesc("tollgate_deployment_time_to_first_byte_seconds",
		"The deployment's time to first byte as the latency strategy sees it (moving average of successful attempts; 0 before the first).", []string{lblDeployment}, nil)
)

func (c *routerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descCoolingDown
	ch <- descDepInFlight
	ch <- descDepTTFB
}

func (c *routerCollector) Collect(ch chan<- prometheus.Metric) {
	for id, st := range c.router.States(c.now()) {
		cooling := 0.0
		if !st.CoolingUntil.IsZero() {
			cooling = 1
		}
		ch <- prometheus.MustNewConstMetric(descCoolingDown, prometheus.GaugeValue, cooling, id)
		ch <- prometheus.MustNewConstMetric(descDepInFlight, prometheus.GaugeValue, float64(st.InFlight), id)
		ch <- prometheus.MustNewConstMetric(descDepTTFB, prometheus.GaugeValue, st.Latency.Seconds(), id)
	}
}
