package xds

import (
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	aggregatev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/clusters/aggregate/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	previoushostsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/host/previous_hosts/v3"
	previousprioritiesv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/retry/priority/previous_priorities/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/routing"
)

// Per-try routing (docs/envoy.md, "Retries across deployments"). For a
// model group that retries elsewhere (routing.PerTry) and each of its
// deployments D, the processor's router-level stream routes a request
// whose first try goes to D to the route envoy.TryKey(group, D). Its
// cluster is an aggregate of deployment clusters in the order to try: D,
// the group's others, then the deployments of the fallback chain
// (routing.GroupChain); and one such route for each set of the next
// routing.TryMaskWidth deployments the processor may leave out of the order
// because they are cooling down (routing.Skip). The route's retry policy moves each retry to the
// next of them (retry_priority previous_priorities: the aggregate's
// clusters are its priorities); an upstream ext_proc filter on the
// aggregate runs once per try and learns the deployment from the picked
// host's metadata (envoy.TryAttribute), since an aggregate reports its own
// name as xds.cluster_name and runs its own upstream filters, not those of
// its clusters (envoyproxy/envoy#29318).

// Group is a model group as the xDS sees it: only what per-try routing
// needs. Groups that do not retry elsewhere emit nothing of their own.
type Group struct {
	Name        string   `yaml:"name"`
	Deployments []string `yaml:"deployments"`
	Retries     int      `yaml:"retries"`
	Fallbacks   []string `yaml:"fallbacks"`
	// The group's context-window and content-policy fallbacks: its per-try
	// routes then carry the internal redirect policy (fallback.go).
	ContextWindowFallbacks []string `yaml:"context_window_fallbacks,omitempty"`
	ContentPolicyFallbacks []string `yaml:"content_policy_fallbacks,omitempty"`
}

// Retry policy of per-try routes, from routing/'s: the failures retried
// (the data plane's connect failures, refused streams and resets, which it
// reports as its 503, and routing.RetriableStatuses), the backoff
// (routing.RetryBackoffBase doubling with jitter, at most
// routing.MaxRetryWait), and a provider's retry-after honoured up to the same
// cap.
const tryRetryOn = "connect-failure,refused-stream,reset,retriable-status-codes"

// tryOutlierInterval is how often Envoy's outlier detection sweeps.
const tryOutlierInterval = time.Second

// tryRetriableStatus is routing.RetriableStatuses as the retry policy's,
// converted once and shared by every per-try route (read-only).
var tryRetriableStatus = func() []uint32 {
	out := make([]uint32, len(routing.RetriableStatuses))
	for i, s := range routing.RetriableStatuses {
		out[i] = uint32(s)
	}
	return out
}()

// tryRoute is one per-try route: its key and deployments in order.
type tryRoute struct {
	key      string
	deps     []string
	retries  int
	redirect bool // the group has context-window or content-policy fallbacks
}

// tryRoutes lists the per-try routes of in, in group then deployment order;
// only deployments with an upstream are listed.
func tryRoutes(in *Input) []tryRoute {
	known := make(map[string]bool, len(in.Upstreams))
	for _, u := range in.Upstreams {
		known[u.Deployment] = true
	}
	byName := make(map[string]*Group, len(in.Groups))
	for i := range in.Groups {
		byName[in.Groups[i].Name] = &in.Groups[i]
	}
	fallbacks := func(n string) []string {
		if g := byName[n]; g != nil {
			return g.Fallbacks
		}
		return nil
	}
	var out []tryRoute
	for _, g := range in.Groups {
		if !routing.PerTry(g.Retries, len(g.Deployments), g.fallbacks()) {
			continue
		}
		redirect := routing.RedirectsFallbacks(len(g.ContextWindowFallbacks), len(g.ContentPolicyFallbacks))
		var all []string // the chain's deployments; TryOrder keeps each once
		for _, name := range routing.GroupChain(g.Name, fallbacks) {
			if fg := byName[name]; fg != nil {
				for _, d := range fg.Deployments {
					if known[d] {
						all = append(all, d)
					}
				}
			}
		}
		for _, first := range g.Deployments {
			if !known[first] {
				continue
			}
			order := routing.TryOrder(first, [][]string{all})
			for skip := range routing.Masks(order) {
				out = append(out, tryRoute{key: envoy.TryKey(g.Name, first, skip), deps: routing.Skipped(order, skip), retries: g.Retries, redirect: redirect})
			}
		}
	}
	return out
}

// tried reports the deployments some per-try route may send to: their
// clusters carry the deployment as endpoint metadata and hostname, and
// outlier detection.
func tried(routes []tryRoute) map[string]bool {
	m := map[string]bool{}
	for _, r := range routes {
		for _, d := range r.deps {
			m[d] = true
		}
	}
	return m
}

// markTried adds to a deployment cluster what per-try routing needs: the
// endpoint's metadata (the upstream filter's envoy.TryAttribute) and
// hostname (the route's auto_host_rewrite), and outlier detection with the
// deployment's allowed_fails and cooldown (Envoy's view of cooldowns).
func (b *builder) markTried(c *clusterv3.Cluster, u Upstream) {
	ep := c.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0]
	ep.GetEndpoint().Hostname = hostHeader(u)
	md, err := structpb.NewStruct(map[string]any{envoy.TryMetadataKey: u.Deployment})
	b.fail("endpoint metadata", err)
	ep.Metadata = &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{envoy.MetadataNamespace: md}}
	fails, cooldown := routing.CooldownPolicy(u.AllowedFails, u.Cooldown)
	c.OutlierDetection = &clusterv3.OutlierDetection{
		Consecutive_5Xx:    wrapperspb.UInt32(uint32(fails)),
		Interval:           durationpb.New(tryOutlierInterval),
		BaseEjectionTime:   durationpb.New(cooldown),
		MaxEjectionPercent: wrapperspb.UInt32(100),
	}
}

// tryCluster is the aggregate cluster of a per-try route, with the
// upstream ext_proc filter.
func (b *builder) tryCluster(r tryRoute) *clusterv3.Cluster {
	clusters := make([]string, len(r.deps))
	for i, d := range r.deps {
		clusters[i] = envoy.ClusterName(d)
	}
	return &clusterv3.Cluster{
		Name:           envoy.TryCluster(r.key),
		ConnectTimeout: durationpb.New(b.in.ConnectTimeout),
		LbPolicy:       clusterv3.Cluster_CLUSTER_PROVIDED,
		ClusterDiscoveryType: &clusterv3.Cluster_ClusterType{ClusterType: &clusterv3.Cluster_CustomClusterType{
			Name:        "envoy.clusters.aggregate",
			TypedConfig: b.any(&aggregatev3.ClusterConfig{Clusters: clusters}),
		}},
		CircuitBreakers: b.circuitBreakers(),
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			// The protocol is each deployment cluster's (chosen after the
			// host, envoyproxy/envoy#11435); these options carry the
			// upstream filters, which run per try.
			httpOptionsKey: b.any(&httpv3.HttpProtocolOptions{
				UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_UseDownstreamProtocolConfig{
					UseDownstreamProtocolConfig: &httpv3.HttpProtocolOptions_UseDownstreamHttpConfig{},
				},
				HttpFilters: []*hcmv3.HttpFilter{
					{Name: envoy.ExtProcFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: b.any(b.upstreamExtProc())}},
					{Name: envoy.UpstreamCodecFilter, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: b.any(&upstreamcodecv3.UpstreamCodec{})}},
				},
			}),
		},
	}
}

// tryRouteConfig is the route of a per-try key.
func (b *builder) tryRouteConfig(r tryRoute, first Upstream, limit *wrapperspb.UInt64Value) *routev3.Route {
	in := b.in
	retry := &routev3.RetryPolicy{
		RetryOn:              tryRetryOn,
		NumRetries:           wrapperspb.UInt32(uint32(r.retries)),
		RetriableStatusCodes: tryRetriableStatus,
		PerTryIdleTimeout:    durationpb.New(in.PerTryIdleTimeout),
		RetryHostPredicate: []*routev3.RetryPolicy_RetryHostPredicate{{
			Name:       "envoy.retry_host_predicates.previous_hosts",
			ConfigType: &routev3.RetryPolicy_RetryHostPredicate_TypedConfig{TypedConfig: b.any(&previoushostsv3.PreviousHostsPredicate{})},
		}},
		HostSelectionRetryMaxAttempts: int64(len(r.deps)),
		RetryPriority: &routev3.RetryPolicy_RetryPriority{
			Name: "envoy.retry_priorities.previous_priorities",
			ConfigType: &routev3.RetryPolicy_RetryPriority_TypedConfig{TypedConfig: b.any(&previousprioritiesv3.PreviousPrioritiesConfig{
				UpdateFrequency: 1,
			})},
		},
		RetryBackOff: &routev3.RetryPolicy_RetryBackOff{
			BaseInterval: durationpb.New(routing.RetryBackoffBase),
			MaxInterval:  durationpb.New(routing.MaxRetryWait),
		},
		RateLimitedRetryBackOff: &routev3.RetryPolicy_RateLimitedRetryBackOff{
			ResetHeaders: []*routev3.RetryPolicy_ResetHeader{{Name: "retry-after", Format: routev3.RetryPolicy_SECONDS}},
			MaxInterval:  durationpb.New(routing.MaxRetryWait),
		},
	}
	if t := routing.TryTimeout(first.FirstByteTimeout, in.PerTryTimeout); t > 0 {
		retry.PerTryTimeout = durationpb.New(t)
	}
	return &routev3.Route{
		Name:  envoy.TryCluster(r.key),
		Match: routeHeaderMatch(r.key),
		Action: &routev3.Route_Route{Route: &routev3.RouteAction{
			ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: envoy.TryCluster(r.key)},
			// Each try's Host is its deployment's: the endpoint hostname.
			HostRewriteSpecifier:   &routev3.RouteAction_AutoHostRewrite{AutoHostRewrite: wrapperspb.Bool(true)},
			Timeout:                durationpb.New(first.Timeout),
			IdleTimeout:            durationpb.New(in.RouteIdleTimeout),
			RetryPolicy:            retry,
			InternalRedirectPolicy: fallbackRedirect(r),
		}},
		RequestBodyBufferLimit: limit,
	}
}

// fallbacks counts a group's fallback groups of every kind (routing.PerTry:
// a context-window or content-policy fallback is somewhere else to go, as
// routing.Group.FallbackCount counts them).
func (g *Group) fallbacks() int {
	return len(g.Fallbacks) + len(g.ContextWindowFallbacks) + len(g.ContentPolicyFallbacks)
}

// fallbackRedirect is the internal redirect policy of a per-try route whose
// group has context-window or content-policy fallbacks (nil otherwise): a
// try refused for either answers envoy.FallbackRedirectStatus, and the
// router recreates the stream with the copied headers (envoy/fallback.go).
// The location is the client's own URL, whose scheme may differ from the
// try's (allow_cross_scheme_redirect); no predicate, since the target is the
// route the request already matched until the processor routes it anew.
func fallbackRedirect(r tryRoute) *routev3.InternalRedirectPolicy {
	if !r.redirect {
		return nil
	}
	return &routev3.InternalRedirectPolicy{
		MaxInternalRedirects:     wrapperspb.UInt32(envoy.MaxFallbackRedirects),
		RedirectResponseCodes:    []uint32{envoy.FallbackRedirectStatus},
		AllowCrossSchemeRedirect: true,
		ResponseHeadersToCopy:    envoy.FallbackCopiedHeaders,
	}
}

// upstreamExtProc is the upstream ext_proc filter: the router-level
// filter's settings, with the attribute naming the try's deployment.
func (b *builder) upstreamExtProc() *extprocfilterv3.ExternalProcessor {
	p := b.extProc()
	p.RequestAttributes = []string{envoy.TryAttribute}
	return p
}
