package routing

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tollgate-ai/tollgate/upstream"
)

// TestStrategiesOrder: the order each strategy gives, on the router alone.
func TestStrategiesOrder(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(s Strategy) (*Router, *Group) {
		a, b := testDep("a"), testDep("b")
		a.RPM, b.RPM = 10, 10
		return NewRouter(), NewGroup(&Group{Name: "g", Strategy: s, Deployments: []*Deployment{a, b}})
	}
	ids := func(ds []*Deployment) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.Target.Deployment)
		}
		return out
	}

	r, g := mk(StrategyLeastBusy)
	r.Start(g.Deployments[0])
	r.Start(g.Deployments[0])
	r.Start(g.Deployments[1])
	for range 20 {
		require.Equal(t, []string{"b", "a"}, ids(r.Order(g, now)), "fewest in flight first")
	}
	r.Finish(g.Deployments[0], 0)
	r.Finish(g.Deployments[0], 0)
	for range 20 {
		require.Equal(t, []string{"a", "b"}, ids(r.Order(g, now)))
	}

	r, g = mk(StrategyLatency)
	r.Observe(g.Deployments[0], 200, 0, 300*time.Millisecond, now)
	r.Observe(g.Deployments[1], 200, 0, 100*time.Millisecond, now)
	require.Equal(t, []string{"b", "a"}, ids(r.Order(g, now)))
	for range 20 { // b slows down: its EWMA overtakes a's
		r.Observe(g.Deployments[1], 200, 0, time.Second, now)
	}
	require.Equal(t, []string{"a", "b"}, ids(r.Order(g, now)))

	r, g = mk(StrategyUsage)
	for range 7 {
		r.Observe(g.Deployments[0], 200, 0, time.Millisecond, now)
	}
	r.Observe(g.Deployments[1], 200, 0, time.Millisecond, now)
	require.Equal(t, []string{"b", "a"}, ids(r.Order(g, now)), "most rpm headroom first")

	r, g = mk(StrategyWeighted)
	g.Deployments[0].Weight, g.Deployments[1].Weight = 3, 1
	first := map[string]int{}
	for range 4000 {
		first[r.Order(g, now)[0].Target.Deployment]++
	}
	require.InDelta(t, 3000, first["a"], 250, "in proportion to the weights")
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"5": 5 * time.Second, "0.5": 500 * time.Millisecond, "": 0, "soon": 0, "-3": 0, "99999": time.Hour,
		now.Add(7 * time.Second).Format(http.TimeFormat): 7 * time.Second,
	} {
		require.Equal(t, want, ParseRetryAfter(v, now), strconv.Quote(v))
	}
}

// testDep is a deployment of group g.
func testDep(id string) *Deployment {
	return &Deployment{Target: &upstream.Target{Model: "g", Deployment: id}}
}
