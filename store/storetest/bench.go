package storetest

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/store"
)

// Bench runs the benchmarks every backend shares. open returns a fresh, empty
// store; Bench closes it.
//
//   - LedgerSettle: settlements appended by many concurrent appenders (16 per
//     GOMAXPROCS), ending in about the order they are appended, as real ones
//     do, timed until they are durable (a final Flush); reports settlements/s.
//   - ConfigGet: concurrent Get of 1,000 objects.
//   - ConfigPut: sequential unconditional Put.
func Bench(b *testing.B, open func(b *testing.B) store.Store) {
	b.Run("LedgerSettle", func(b *testing.B) {
		st := open(b)
		defer closeBench(b, st)
		tmpl := Gen(1024, 42, "tmpl")
		var seq atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(16)
		start := time.Now()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				n := seq.Add(1)
				e := tmpl[n%int64(len(tmpl))]
				e.RequestID = fmt.Sprint("b-", n)
				// Settlements end in about the order they are appended.
				e.EndedAt = base.Add(time.Duration(n) * time.Microsecond)
				e.StartedAt = e.EndedAt.Add(-time.Second)
				if err := st.Append(b.Context(), e); err != nil {
					b.Error(err)
					return
				}
			}
		})
		if err := st.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "settlements/s")
	})
	b.Run("ConfigGet", func(b *testing.B) {
		st := open(b)
		defer closeBench(b, st)
		const objects = 1000
		for i := range objects {
			if _, err := st.Put(b.Context(), obj(store.KindKey, fmt.Sprint("key", i), `{"id":"x","limits":{"rpm":60}}`), -1); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			r := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for pb.Next() {
				if _, err := st.Get(b.Context(), store.KindKey, fmt.Sprint("key", r.IntN(objects))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("ConfigPut", func(b *testing.B) {
		st := open(b)
		defer closeBench(b, st)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := st.Put(b.Context(), obj(store.KindKey, fmt.Sprint("key", i%1000), `{"id":"x","limits":{"rpm":60}}`), -1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func closeBench(b *testing.B, st store.Store) {
	b.Helper()
	b.StopTimer()
	if err := st.Close(timeout(b, time.Minute)); err != nil {
		b.Error(err)
	}
}
