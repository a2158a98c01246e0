package sqlite_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/store/groupcommit"
	"github.com/tollgate-ai/tollgate/store/sqlite"
	"github.com/tollgate-ai/tollgate/store/storetest"
)

// cpuTime is the CPU time (user and system) this process has used: on a
// shared machine, settlements per CPU-second say what the code costs when the
// wall clock says mostly how busy the neighbours are.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSettleSweep measures durable settlements per second through the
// group-commit writer for a few settings, and the batch sizes they produce.
func BenchmarkSettleSweep(b *testing.B) {
	for _, sync := range []sqlite.Sync{sqlite.SyncFull, sqlite.SyncNormal} {
		for _, maxBatch := range []int{1024, 4096} {
			for _, rows := range []int{64, 256, 1024} {
				window := 2 * time.Millisecond
				name := fmt.Sprintf("sync=%s/batch=%d/rows=%d", sync, maxBatch, rows)
				b.Run(name, func(b *testing.B) {
					st := openAt(b, filepath.Join(b.TempDir(), "tollgate.db"), sqlite.WithSync(sync), sqlite.WithInsertRows(rows),
						sqlite.WithLedger(groupcommit.WithMaxBatch(maxBatch), groupcommit.WithWindow(window)))
					tmpl := storetest.Gen(1024, 42, "tmpl")
					base := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
					var seq atomic.Int64
					b.SetParallelism(16)
					cpu0 := cpuTime()
					start := time.Now()
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							n := seq.Add(1)
							e := tmpl[n%int64(len(tmpl))]
							e.RequestID = fmt.Sprint("b-", n)
							e.EndedAt = base.Add(time.Duration(n) * time.Microsecond)
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
					stats := st.LedgerStats()
					b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "settlements/s")
					b.ReportMetric(float64(b.N)/(cpuTime()-cpu0).Seconds(), "settlements/cpu-s")
					b.ReportMetric(float64(stats.Entries)/float64(max(stats.Batches, 1)), "entries/batch")
					if err := st.Close(b.Context()); err != nil {
						b.Fatal(err)
					}
				})
			}
		}
	}
}

// BenchmarkSettleRandomIDs is the gateway's ledger load: random request ids
// (like Envoy's x-request-id UUIDs) in batches of 50 (BATCH=n to change),
// one commit each: about what a 10 ms window gathers at 5,000 req/s.
func BenchmarkSettleRandomIDs(b *testing.B) {
	st := openAt(b, filepath.Join(b.TempDir(), "tollgate.db"))
	tmpl := storetest.Gen(1024, 42, "tmpl")
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	batch := 50
	if v, err := strconv.Atoi(os.Getenv("BATCH")); err == nil {
		batch = v
	}
	cpu0 := cpuTime()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		for i := range batch {
			e := tmpl[(n+i)%len(tmpl)]
			e.RequestID = fmt.Sprintf("%016x-%016x", rng.Uint64(), rng.Uint64())
			e.EndedAt = base.Add(time.Duration(n+i) * time.Microsecond)
			if err := st.Append(b.Context(), e); err != nil {
				b.Fatal(err)
			}
		}
		if err := st.Flush(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/settlement")
	if err := st.Close(b.Context()); err != nil {
		b.Fatal(err)
	}
}
