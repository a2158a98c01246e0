package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// validator is implemented by every generated Envoy config message
// (protoc-gen-validate).
type validator interface {
	ValidateAll() error
}

// builder turns a normalized Input into resources. The first error wins; the
// builder methods return partial resources after it, which Build discards.
type builder struct {
	in    *Input
	tries []tryRoute // per-try routes (pertry.go)
	err   error
}

func (b *builder) fail(what string, err error) {
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("%w: %s: %w", ErrInvalidResource, what, err)
	}
}

// any validates m (typed configs are opaque to the outer message's
// validation) and packs it.
func (b *builder) any(m proto.Message) *anypb.Any {
	name := string(m.ProtoReflect().Descriptor().FullName())
	if v, ok := m.(validator); ok {
		b.fail(name, v.ValidateAll())
	}
	// Deterministic, so that equal inputs give equal bytes and versions.
	a := &anypb.Any{}
	b.fail(name, anypb.MarshalFrom(a, m, proto.MarshalOptions{Deterministic: true}))
	return a
}

// Resources are the xDS resources built from an Input, in a fixed order:
// the listener, the route configuration, the deployment clusters in Input
// order, the per-try aggregate clusters, then the ext_proc cluster.
type Resources struct {
	Listeners []types.Resource
	Routes    []types.Resource
	Clusters  []types.Resource
}

// BuildResources normalizes in (applies defaults, checks it) and builds every
// resource, each validated with ValidateAll.
func BuildResources(in *Input) (*Resources, error) {
	norm, err := normalize(in)
	if err != nil {
		return nil, err
	}
	b := &builder{in: norm, tries: tryRoutes(norm)}
	res := &Resources{
		Listeners: []types.Resource{b.listener()},
		Routes:    []types.Resource{b.routeConfiguration()},
	}
	marked := tried(b.tries)
	for _, u := range norm.Upstreams {
		c := b.upstreamCluster(u)
		if marked[u.Deployment] {
			b.markTried(c, u)
		}
		res.Clusters = append(res.Clusters, c)
	}
	for _, r := range b.tries {
		res.Clusters = append(res.Clusters, b.tryCluster(r))
	}
	if norm.MCP != nil {
		res.Clusters = append(res.Clusters, b.mcpCluster())
	}
	res.Clusters = append(res.Clusters, b.extProcCluster())
	if b.err != nil {
		return nil, b.err
	}
	for _, r := range res.all() {
		if err := r.(validator).ValidateAll(); err != nil {
			return nil, fmt.Errorf("%w: %s %q: %w", ErrInvalidResource,
				r.ProtoReflect().Descriptor().FullName(), cache.GetResourceName(r), err)
		}
	}
	return res, nil
}

func (r *Resources) all() []types.Resource {
	all := make([]types.Resource, 0, len(r.Listeners)+len(r.Routes)+len(r.Clusters))
	all = append(all, r.Listeners...)
	all = append(all, r.Routes...)
	return append(all, r.Clusters...)
}

// Hash is a content hash of the resources: equal inputs give equal hashes,
// so republishing an unchanged Input is a no-op for every client.
func (r *Resources) Hash() (string, error) {
	h := sha256.New()
	marshal := proto.MarshalOptions{Deterministic: true}
	for _, res := range r.all() {
		data, err := marshal.Marshal(res)
		if err != nil {
			return "", fmt.Errorf("%w: hash: %w", ErrInvalidResource, err)
		}
		// Length-prefix each resource so boundaries are part of the hash.
		_, _ = fmt.Fprintf(h, "%d:", len(data))
		_, _ = h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Build builds a consistent, validated snapshot of in. An empty version uses
// the content hash of the resources.
func Build(in *Input, version string) (*cache.Snapshot, error) {
	res, err := BuildResources(in)
	if err != nil {
		return nil, err
	}
	if version == "" {
		if version, err = res.Hash(); err != nil {
			return nil, err
		}
	}
	snap, err := cache.NewSnapshot(version, map[resource.Type][]types.Resource{
		resource.ListenerType: res.Listeners,
		resource.RouteType:    res.Routes,
		resource.ClusterType:  res.Clusters,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidResource, err)
	}
	if err := snap.Consistent(); err != nil {
		return nil, errors.Join(ErrInvalidResource, err)
	}
	return snap, nil
}
