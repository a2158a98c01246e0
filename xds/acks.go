package xds

import (
	"context"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoverygrpc "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
)

// acks records, per open stream and resource type, the last version the
// client acknowledged (a request without error_detail carries the version it
// applied; "" until the first one), so that a caller can wait until every
// connected data plane has applied a snapshot.
type acks struct {
	mu      sync.Mutex
	streams map[int64]map[string]string
	changed chan struct{} // closed and replaced on every change
}

func newAcks() *acks {
	return &acks{streams: make(map[int64]map[string]string), changed: make(chan struct{})}
}

func (a *acks) notifyLocked() {
	close(a.changed)
	a.changed = make(chan struct{})
}

func (a *acks) request(id int64, req *discoverygrpc.DiscoveryRequest) {
	switch req.GetTypeUrl() {
	case resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType:
	default:
		return // not in the snapshot: never answered, never acknowledged
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	types := a.streams[id]
	if types == nil {
		types = make(map[string]string, 4)
		a.streams[id] = types
	}
	v, seen := types[req.GetTypeUrl()]
	if req.GetErrorDetail() == nil {
		v = req.GetVersionInfo()
	}
	if !seen || v != types[req.GetTypeUrl()] {
		types[req.GetTypeUrl()] = v
		a.notifyLocked()
	}
}

func (a *acks) closed(id int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.streams[id]; ok {
		delete(a.streams, id)
		a.notifyLocked()
	}
}

// wait returns nil once every open stream has acknowledged version for
// every type it subscribed to, or ctx's error.
func (a *acks) wait(ctx context.Context, version string) error {
	for {
		a.mu.Lock()
		done, changed := true, a.changed
		for _, types := range a.streams {
			for _, v := range types {
				done = done && v == version
			}
		}
		a.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tracking wraps the configured callbacks with the acknowledgement record.
type tracking struct {
	serverv3.Callbacks
	acks *acks
}

func (t tracking) OnStreamRequest(id int64, req *discoverygrpc.DiscoveryRequest) error {
	t.acks.request(id, req)
	return t.Callbacks.OnStreamRequest(id, req)
}

func (t tracking) OnStreamClosed(id int64, node *corev3.Node) {
	t.acks.closed(id)
	t.Callbacks.OnStreamClosed(id, node)
}

// WaitApplied returns once every data plane connected over a state-of-the-
// world stream has acknowledged the published snapshot (each of the types it
// subscribed to), or with ctx's error. With none connected it returns at once.
func (s *Server) WaitApplied(ctx context.Context) error {
	return s.acks.wait(ctx, s.Version())
}
