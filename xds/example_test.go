package xds_test

import (
	"fmt"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/tollgate-ai/tollgate/xds"
)

func ExampleBuild() {
	snap, err := xds.Build(&xds.Input{
		ExtProc: xds.Address{Path: "/run/tollgate/extproc.sock"},
		Upstreams: []xds.Upstream{
			{Deployment: "openai-gpt-4o", Scheme: "https", Host: "api.openai.com", HTTP2: true},
		},
	}, "v1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, typ := range []string{resource.ListenerType, resource.RouteType, resource.ClusterType} {
		fmt.Println(typ[len("type.googleapis.com/"):], len(snap.GetResources(typ)))
	}
	_, ok := snap.GetResources(resource.ClusterType)["deployment_openai-gpt-4o"]
	fmt.Println(ok)
	// Output:
	// envoy.config.listener.v3.Listener 1
	// envoy.config.route.v3.RouteConfiguration 1
	// envoy.config.cluster.v3.Cluster 2
	// true
}
