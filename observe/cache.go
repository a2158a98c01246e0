package observe

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-ai/tollgate/extproc"
)

// Response cache metrics (docs/caching.md): every request of a model group
// with a cache is counted once by its result, and a hit adds the cost the
// cached reply had — what the hit saved.

// Cache results.
const (
	cacheHit         = "hit"
	cacheSemanticHit = "semantic_hit"
	cacheMiss        = "miss"
	cacheSkip        = "skip"
)

type cacheMetrics struct {
	results *prometheus.CounterVec
	saved   *prometheus.CounterVec
}

func newCacheMetrics(reg *prometheus.Registry) cacheMetrics {
	c := cacheMetrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_cache_requests_total",
			Help: "Requests of model groups with a response cache, by model group, team and result: hit, semantic_hit, miss (looked up, went upstream) or skip (not cacheable, or Cache-Control: no-cache).",
		}, []string{lblModelGroup, lblTeam, "result"}),
		saved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_cache_saved_nano_usd_total",
			Help: "Cost the cache's hits saved, in nano-USD (1e-9 $): what each reply cost when it was stored, by model group and team.",
		}, []string{lblModelGroup, lblTeam}),
	}
	reg.MustRegister(c.results, c.saved)
	return c
}

// observeCache counts a settled request's cache result.
func (m *Metrics) observeCache(r *extproc.Report, team string) {
	c := &r.Cache
	if c.Status == "" || r.Target == nil {
		return
	}
	model := r.Target.Model
	var result string
	switch {
	case c.Hit && c.Semantic:
		result = cacheSemanticHit
	case c.Hit:
		result = cacheHit
	case strings.HasPrefix(c.Status, cacheMiss):
		result = cacheMiss
	default:
		result = cacheSkip
	}
	m.cacheM.results.WithLabelValues(model, team, result).Inc()
	if c.Hit && c.Saved > 0 {
		m.cacheM.saved.WithLabelValues(model, team).Add(float64(c.Saved))
	}
}
