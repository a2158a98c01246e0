package extproc

import "testing"

type nopObserver struct{}

func (nopObserver) Observe(*Report) {}

// BenchmarkHandleNonStreamObserved is BenchmarkHandleNonStream with an
// observer that does nothing: what the processor's reporting costs.
func BenchmarkHandleNonStreamObserved(b *testing.B) {
	benchHandleNonStream(b, New(newCatalog(), benchAccountant{}, WithObserver(nopObserver{})))
}
