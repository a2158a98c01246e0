package envoy

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"gopkg.in/yaml.v3"
)

// FuzzBootstrap: any options either are refused with ErrInvalidBootstrap
// or render a bootstrap that loads and passes Envoy's validation, with the
// node id and cluster intact (no YAML injection).
func FuzzBootstrap(f *testing.F) {
	f.Add("tollgate-envoy", "tollgate", "127.0.0.1:18000", "", "127.0.0.1:9901")
	f.Add("envoy: {x}", "a\nb", "tollgate:18000", "unix:///run/x.sock", "[::1]:9901")
	f.Add("", "", "unix:@xds", "/run/extproc.sock", "")
	f.Add("#", "'", "[::1]:1", "ext-proc.svc:50051", "127.0.0.2:1")
	f.Fuzz(func(t *testing.T, nodeID, nodeCluster, xds, extProc, admin string) {
		out, err := Bootstrap(BootstrapOptions{NodeID: nodeID, NodeCluster: nodeCluster, XDS: xds, ExtProc: extProc, Admin: admin})
		if err != nil {
			if !errors.Is(err, ErrInvalidBootstrap) {
				t.Fatalf("error %v does not wrap ErrInvalidBootstrap", err)
			}
			return
		}
		var v any
		if err := yaml.Unmarshal(out, &v); err != nil {
			t.Fatalf("not YAML: %v\n%s", err, out)
		}
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("not JSON-able: %v", err)
		}
		var b bootstrapv3.Bootstrap
		if err := protojson.Unmarshal(js, &b); err != nil {
			t.Fatalf("not a Bootstrap: %v\n%s", err, out)
		}
		if err := b.ValidateAll(); err != nil {
			t.Fatalf("invalid Bootstrap: %v\n%s", err, out)
		}
		if nodeID != "" && utf8.ValidString(nodeID) && b.GetNode().GetId() != nodeID {
			t.Fatalf("node id %q came back as %q", nodeID, b.GetNode().GetId())
		}
	})
}
