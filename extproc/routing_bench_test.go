package extproc

import (
	"testing"

	"github.com/tollgate-ai/tollgate/routing"
)

// BenchmarkHandleNonStreamGroup is BenchmarkHandleNonStream routed through a
// model group of one deployment (routing.go): the cost routing adds
// to every request of the common case.
func BenchmarkHandleNonStreamGroup(b *testing.B) {
	cat := newCatalog()
	t := cat.targets["gpt-4o"]
	gc := &groupCatalog{fakeCatalog: cat, groups: map[string]*routing.Group{
		"gpt-4o": routing.NewGroup(&routing.Group{Name: "gpt-4o", Retries: 2, Deployments: []*routing.Deployment{{Target: t}}}),
	}}
	benchHandleNonStream(b, New(gc, benchAccountant{}))
}
