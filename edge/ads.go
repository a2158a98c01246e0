package edge

import (
	"context"
	"errors"
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/envoy"
)

// state is one complete configuration, swapped atomically.
type state struct {
	listener *listenerConf
	routes   *routeTable
	clusters map[string]*cluster
	// tryFilters are the upstream ext_proc clients of the aggregate
	// clusters (pertry.go).
	tryFilters map[string]*extprocfilter.Client
}

// resources are the accepted resources of the ADS stream.
type resources struct {
	listener *listenerv3.Listener
	lconf    *listenerConf
	routes   map[string]*routev3.RouteConfiguration
	clusters map[string]*cluster
	versions map[string]string // type URL → last accepted version
	nonces   map[string]string // type URL → last nonce seen
	rdsName  string            // route configuration subscribed to
	cdsSeen  bool              // a cluster update was accepted (Envoy's CDS init)
}

// RunADS subscribes to clusters, listeners and the listener's route
// configuration over one ADS stream on xdsConn, as Envoy does, and applies
// every accepted update atomically; the listener is bound when first known
// and serves once its routes have arrived. It reconnects on stream errors and
// returns nil when ctx is done (the listener keeps serving until Shutdown),
// or an error when the edge was shut down.
func (e *Edge) RunADS(ctx context.Context, xdsConn *grpc.ClientConn, nodeID string) error {
	res := &resources{
		routes:   map[string]*routev3.RouteConfiguration{},
		clusters: map[string]*cluster{},
		versions: map[string]string{},
	}
	backoff := 100 * time.Millisecond
	for {
		err := e.adsStream(ctx, xdsConn, nodeID, res)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // cancellation is the normal end
		}
		if errors.Is(err, ErrClosed) {
			return err
		}
		e.logger.Warn("edge ADS stream ended; reconnecting", "error", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (e *Edge) adsStream(ctx context.Context, conn *grpc.ClientConn, nodeID string, res *resources) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := discoveryv3.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		return err
	}
	node := &corev3.Node{Id: nodeID, Cluster: "tollgate-edge", UserAgentName: "tollgate-edge"}
	res.nonces = map[string]string{}
	send := func(typeURL string, names []string, errDetail error) error {
		req := &discoveryv3.DiscoveryRequest{
			Node:          node,
			TypeUrl:       typeURL,
			VersionInfo:   res.versions[typeURL],
			ResponseNonce: res.nonces[typeURL],
			ResourceNames: names,
		}
		if errDetail != nil {
			req.ErrorDetail = &statuspb.Status{Code: 3, Message: errDetail.Error()} // INVALID_ARGUMENT
		}
		return stream.Send(req)
	}
	// Envoy's order: clusters first, then listeners, then the routes the
	// listeners name.
	if err := send(resource.ClusterType, nil, nil); err != nil {
		return err
	}
	if err := send(resource.ListenerType, nil, nil); err != nil {
		return err
	}
	if res.rdsName != "" {
		if err := send(resource.RouteType, []string{res.rdsName}, nil); err != nil {
			return err
		}
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		typeURL := resp.GetTypeUrl()
		res.nonces[typeURL] = resp.GetNonce()
		var names []string
		if typeURL == resource.RouteType && res.rdsName != "" {
			names = []string{res.rdsName}
		}
		oldRDS := res.rdsName
		if aerr := e.accept(ctx, res, resp); aerr != nil {
			e.logger.Warn("edge rejected xDS update", "type", typeURL, "version", resp.GetVersionInfo(), "error", aerr)
			if errors.Is(aerr, ErrClosed) {
				return aerr
			}
			if err := send(typeURL, names, aerr); err != nil {
				return err
			}
			continue
		}
		res.versions[typeURL] = resp.GetVersionInfo()
		if err := send(typeURL, names, nil); err != nil {
			return err
		}
		if res.rdsName != oldRDS && res.rdsName != "" {
			if err := send(resource.RouteType, []string{res.rdsName}, nil); err != nil {
				return err
			}
		}
	}
}

// accept decodes and compiles one response and publishes the resulting state
// when it is complete; on error nothing changes.
func (e *Edge) accept(ctx context.Context, res *resources, resp *discoveryv3.DiscoveryResponse) error {
	next := *res
	switch resp.GetTypeUrl() {
	case resource.ClusterType:
		next.cdsSeen = true
		next.clusters = map[string]*cluster{}
		for _, a := range resp.GetResources() {
			var c clusterv3.Cluster
			if err := a.UnmarshalTo(&c); err != nil {
				return fmt.Errorf("%w: cluster: %w", ErrUnsupported, err)
			}
			if old, ok := res.clusters[c.GetName()]; ok && old.same(&c) {
				next.clusters[c.GetName()] = old
				continue
			}
			cl, err := compileCluster(&c) //nolint:contextcheck // its h1 dials are bound by connect_timeout, not by a request (cluster.go)
			if err != nil {
				return fmt.Errorf("%w: %w", ErrUnsupported, err)
			}
			next.clusters[c.GetName()] = cl
		}
	case resource.ListenerType:
		var chosen *listenerv3.Listener
		for _, a := range resp.GetResources() {
			var l listenerv3.Listener
			if err := a.UnmarshalTo(&l); err != nil {
				return fmt.Errorf("%w: listener: %w", ErrUnsupported, err)
			}
			if chosen == nil || l.GetName() == envoy.ListenerName {
				chosen = &l
			}
		}
		if chosen == nil {
			return fmt.Errorf("%w: no listener", ErrUnsupported)
		}
		lc, err := compileListener(chosen, e.base)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		if err := e.bind(ctx, lc); err != nil {
			return err
		}
		next.listener, next.lconf, next.rdsName = chosen, lc, lc.rdsName
	case resource.RouteType:
		next.routes = map[string]*routev3.RouteConfiguration{}
		for _, a := range resp.GetResources() {
			var rc routev3.RouteConfiguration
			if err := a.UnmarshalTo(&rc); err != nil {
				return fmt.Errorf("%w: route configuration: %w", ErrUnsupported, err)
			}
			next.routes[rc.GetName()] = &rc
		}
	default:
		return fmt.Errorf("%w: type %s was not requested", ErrUnsupported, resp.GetTypeUrl())
	}
	st, err := e.build(&next)
	if err != nil {
		return err
	}
	for name, c := range res.clusters {
		if next.clusters[name] != c && st == nil {
			c.close() // replaced before ever serving
		}
	}
	*res = next
	if st != nil {
		e.publish(st) //nolint:contextcheck // the listener outlives the ADS stream's context
	}
	return nil
}

// build compiles the complete state of res; nil (no error) while the
// clusters, the listener or its routes are missing.
func (e *Edge) build(res *resources) (*state, error) {
	if res.lconf == nil || !res.cdsSeen {
		return nil, nil
	}
	lc := res.lconf
	rc := lc.inline
	if rc == nil {
		rc = res.routes[lc.rdsName]
	}
	if rc == nil {
		return nil, nil
	}
	rt, err := compileRoutes(rc, lc, func(limit int) *extprocfilter.Client {
		cfg := *lc.extProc
		cfg.RequestBufferLimit = limit
		return extprocfilter.NewClient(e.proc, cfg)
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	tf, err := e.tryFilters(res.clusters, lc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return &state{listener: lc, routes: rt, clusters: res.clusters, tryFilters: tf}, nil
}
