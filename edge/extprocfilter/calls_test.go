package extprocfilter

import (
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

type nopSync struct{}

func (nopSync) Handle(*extprocv3.ProcessingRequest, func(*extprocv3.ProcessingResponse)) error {
	return nil
}
func (nopSync) Close() {}

// BenchmarkProcCall is the cost of running a processor call on a worker
// (two goroutine switches) rather than in the caller: compare with -cpu 1,
// the gateway's share of a core in bench/run.sh.
func BenchmarkProcCall(b *testing.B) {
	m := &extprocv3.ProcessingRequest{}
	queue := func(*extprocv3.ProcessingResponse) {}
	b.Run("worker", func(b *testing.B) {
		c := &procCall{ss: nopSync{}, m: m, queue: queue}
		for b.Loop() {
			c.run()
		}
	})
	b.Run("inline", func(b *testing.B) {
		var ss SyncStream = nopSync{}
		for b.Loop() {
			_ = ss.Handle(m, queue)
		}
	})
}
