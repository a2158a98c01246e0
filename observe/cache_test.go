package observe

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
)

func TestCacheMetrics(t *testing.T) {
	m := NewMetrics()
	target := &extproc.Target{Model: "g", Deployment: "d"}
	team := &extproc.Principal{KeyID: "k", TeamID: "t"}
	for _, c := range []extproc.CacheRecord{
		{Hit: true, Saved: 5, Status: "hit"},
		{Hit: true, Semantic: true, Saved: 7, Status: "hit; semantic; score=0.971"},
		{Status: "miss"},
		{Status: "miss"},
		{Status: "skip"},
		{}, // a group without a cache: not counted
	} {
		m.Observe(&extproc.Report{Target: target, Principal: team, HTTPStatus: 200, Settled: true, Cache: c})
	}
	require.Equal(t, map[string]float64{
		"tollgate_cache_requests_total{model_group=g,result=hit,team=t}":          1,
		"tollgate_cache_requests_total{model_group=g,result=semantic_hit,team=t}": 1,
		"tollgate_cache_requests_total{model_group=g,result=miss,team=t}":         2,
		"tollgate_cache_requests_total{model_group=g,result=skip,team=t}":         1,
		"tollgate_cache_saved_nano_usd_total{model_group=g,team=t}":               12,
	}, only(gathered(t, m), "tollgate_cache_"))
}
