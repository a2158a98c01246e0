package extproc

import "testing"

// BenchmarkHandleNonStreamGroup is BenchmarkHandleNonStream routed through a
// model group of one deployment (routing.go, retry.go): the cost routing adds
// to every request of the common case.
func BenchmarkHandleNonStreamGroup(b *testing.B) {
	cat := newCatalog()
	t := cat.targets["gpt-4o"]
	gc := &groupCatalog{fakeCatalog: cat, groups: map[string]*Group{
		"gpt-4o": NewGroup(&Group{Name: "gpt-4o", Retries: 2, Deployments: []*Deployment{{Target: t}}}),
	}}
	benchHandleNonStream(b, New(gc, benchAccountant{}))
}
