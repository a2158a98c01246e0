package xds

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/routing"
)

// TestPlainGroupsEmitWhatTheyDid: groups that do not retry elsewhere (one
// deployment and no fallback, or retries 0) add nothing: the resources are
// byte for byte those of an input without groups.
func TestPlainGroupsEmitWhatTheyDid(t *testing.T) {
	in := readInput(t, "testdata/in/providers.yaml")
	plain, err := BuildResources(in)
	require.NoError(t, err)
	want, err := plain.Hash()
	require.NoError(t, err)
	in.Groups = []Group{
		{Name: "gpt", Deployments: []string{"openai-gpt-4o"}, Retries: 2},
		{Name: "both", Deployments: []string{"openai-gpt-4o", "anthropic-claude"}, Retries: 0},
	}
	grouped, err := BuildResources(in)
	require.NoError(t, err)
	got, err := grouped.Hash()
	require.NoError(t, err)
	require.Equal(t, want, got)
}

// TestTryClusterOrder: a per-try aggregate lists its first deployment, the
// group's others, then the fallback chain's, each once.
func TestTryClusterOrder(t *testing.T) {
	res, err := BuildResources(readInput(t, "testdata/in/pertry.yaml"))
	require.NoError(t, err)
	orders := map[string][]string{}
	for _, r := range res.Clusters {
		c := r.(*clusterv3.Cluster)
		if ct := c.GetClusterType(); ct != nil {
			var agg aggregatev3.ClusterConfig
			require.NoError(t, ct.GetTypedConfig().UnmarshalTo(&agg))
			orders[c.GetName()] = agg.GetClusters()
		}
	}
	a, b, c := "deployment_openai-a", "deployment_azure-b", "deployment_anthropic-claude"
	require.Equal(t, map[string][]string{
		envoy.TryCluster(envoy.TryKey("gpt-4o", "openai-a", 0)): {a, b, c},
		envoy.TryCluster(envoy.TryKey("gpt-4o", "openai-a", 1)): {a, c}, // azure-b cooling down
		envoy.TryCluster(envoy.TryKey("gpt-4o", "openai-a", 2)): {a, b},
		envoy.TryCluster(envoy.TryKey("gpt-4o", "openai-a", 3)): {a},
		envoy.TryCluster(envoy.TryKey("gpt-4o", "azure-b", 0)):  {b, a, c},
		envoy.TryCluster(envoy.TryKey("gpt-4o", "azure-b", 1)):  {b, c},
		envoy.TryCluster(envoy.TryKey("gpt-4o", "azure-b", 2)):  {b, a},
		envoy.TryCluster(envoy.TryKey("gpt-4o", "azure-b", 3)):  {b},
	}, orders)
}

// TestFallbackRedirectPolicy: only the per-try routes of a group with
// context-window or content-policy fallbacks carry the internal redirect
// policy, and a group with those fallbacks alone is routed per try.
func TestFallbackRedirectPolicy(t *testing.T) {
	res, err := BuildResources(readInput(t, "testdata/in/fallbacks.yaml"))
	require.NoError(t, err)
	policies := map[string]*routev3.InternalRedirectPolicy{}
	for _, r := range res.Routes {
		for _, vr := range r.(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes() {
			if p := vr.GetRoute().GetInternalRedirectPolicy(); p != nil {
				policies[vr.GetName()] = p
			}
		}
	}
	require.Len(t, policies, 1)
	p := policies[envoy.TryCluster(envoy.TryKey("small", "openai-small", 0))]
	require.NotNil(t, p, "the group's one per-try route")
	require.Equal(t, []uint32{envoy.FallbackRedirectStatus}, p.GetRedirectResponseCodes())
	require.Equal(t, uint32(1), p.GetMaxInternalRedirects().GetValue())
	require.Equal(t, envoy.FallbackCopiedHeaders, p.GetResponseHeadersToCopy())
	require.True(t, p.GetAllowCrossSchemeRedirect())

	// Without them the per-try routes of pertry.yaml have none.
	res, err = BuildResources(readInput(t, "testdata/in/pertry.yaml"))
	require.NoError(t, err)
	for _, r := range res.Routes {
		for _, vr := range r.(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes() {
			require.Nil(t, vr.GetRoute().GetInternalRedirectPolicy(), vr.GetName())
		}
	}
}

// TestTryPolicyIsRouting: a per-try route retries what routing/ counts as a
// deployment's failure, with routing/'s backoff and per-try timeout
// (routing.TryTimeout, on plain routes too), and its clusters eject a
// deployment with routing/'s cooldown policy (defaults included).
func TestTryPolicyIsRouting(t *testing.T) {
	in := readInput(t, "testdata/in/pertry.yaml")
	in.PerTryTimeout = 30 * time.Second
	res, err := BuildResources(in)
	require.NoError(t, err)
	firstByte := map[string]time.Duration{}
	for _, u := range in.Upstreams {
		firstByte[u.Deployment] = u.FirstByteTimeout
	}
	wantTimeout := map[string]time.Duration{} // route name → per-try timeout
	for dep, fb := range firstByte {
		wantTimeout[envoy.ClusterName(dep)] = routing.TryTimeout(fb, in.PerTryTimeout)
	}
	for _, r := range tryRoutes(in) {
		wantTimeout[envoy.TryCluster(r.key)] = routing.TryTimeout(firstByte[r.deps[0]], in.PerTryTimeout)
	}
	require.Equal(t, 10*time.Second, wantTimeout[envoy.ClusterName("openai-a")], "its first-byte timeout")
	require.Equal(t, 30*time.Second, wantTimeout[envoy.ClusterName("azure-b")], "the data plane's")
	var timed int
	for _, rc := range res.Routes {
		for _, r := range rc.(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes() {
			if want, ok := wantTimeout[r.GetName()]; ok {
				timed++
				require.Equal(t, want, r.GetRoute().GetRetryPolicy().GetPerTryTimeout().AsDuration(), r.GetName())
			}
		}
	}
	require.Len(t, wantTimeout, timed, "every plain and per-try route")
	var tries int
	for _, rc := range res.Routes {
		for _, r := range rc.(*routev3.RouteConfiguration).GetVirtualHosts()[0].GetRoutes() {
			rp := r.GetRoute().GetRetryPolicy()
			if rp.GetRetryBackOff() == nil {
				continue
			}
			tries++
			var want []uint32
			for _, s := range routing.RetriableStatuses {
				want = append(want, uint32(s))
			}
			require.Equal(t, want, rp.GetRetriableStatusCodes())
			require.Equal(t, routing.RetryBackoffBase, rp.GetRetryBackOff().GetBaseInterval().AsDuration())
			require.Equal(t, routing.MaxRetryWait, rp.GetRetryBackOff().GetMaxInterval().AsDuration())
			require.Equal(t, routing.MaxRetryWait, rp.GetRateLimitedRetryBackOff().GetMaxInterval().AsDuration())
		}
	}
	require.Positive(t, tries)
	ejections := map[string]*clusterv3.OutlierDetection{}
	for _, r := range res.Clusters {
		if od := r.(*clusterv3.Cluster).GetOutlierDetection(); od != nil {
			ejections[r.(*clusterv3.Cluster).GetName()] = od
		}
	}
	require.NotEmpty(t, ejections)
	for name, od := range ejections {
		fails, cool := routing.CooldownPolicy(0, 0)
		if name == "deployment_openai-a" { // allowed_fails 2, cooldown 20s in the input
			fails, cool = routing.CooldownPolicy(2, 20*time.Second)
		}
		require.Equal(t, uint32(fails), od.GetConsecutive_5Xx().GetValue(), name)
		require.Equal(t, cool, od.GetBaseEjectionTime().AsDuration(), name)
	}
}
