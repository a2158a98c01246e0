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

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
	"github.com/tollgate-ai/tollgate/store/sqlite"
	"github.com/tollgate-ai/tollgate/store/storetest"
)

// cpuTime is the CPU time (user and system) this process has used: on a
// shared machine, settlements per CPU-second say what the code costs when the
// wall clock says mostly how busy the neighbours are.
func cpuTime() time.Duration {
	user, sys := cpuTimes()
	return user + sys
}

// cpuTimes is the user and the system CPU time this process has used.
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
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

// BenchmarkSettleRandomIDs is the gateway's ledger load through the gateway's
// path: one Append per settled request (as gateway.Accountant.Settle does),
// random request ids (UUIDs, like Envoy's and the edge's x-request-id), and a
// Flush every 50 entries (BATCH=n to change), so each commit writes about what
// a 10 ms window gathers at 5,000 req/s. The entries are made before the timer
// starts: allocs/op are the store's own allocations per settlement, and
// cpu-µs/settlement its CPU (the writer goroutine's included). PLAIN=1 writes
// the rows a plain request settles (no run, no tags, priced), as the
// demo-model traffic of bench/compare.sh does.
func BenchmarkSettleRandomIDs(b *testing.B) {
	st := openAt(b, filepath.Join(b.TempDir(), "tollgate.db"))
	tmpl := storetest.Gen(1024, 42, "tmpl")
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)
	batch := 50
	if v, err := strconv.Atoi(os.Getenv("BATCH")); err == nil && v > 0 {
		batch = v
	}
	plain := os.Getenv("PLAIN") == "1"
	entries := make([]store.LedgerEntry, b.N)
	for i := range entries {
		e := tmpl[i%len(tmpl)]
		if plain {
			e.RunID, e.Tags, e.Unpriced = "", nil, false
		}
		e.RequestID = fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff,
			rng.Uint32()&0xfff, 0x8000|rng.Uint32()&0x3fff, rng.Uint64()&(1<<48-1))
		e.EndedAt = base.Add(time.Duration(i) * time.Microsecond)
		e.StartedAt = e.EndedAt.Add(-time.Second)
		entries[i] = e
	}
	ctx := b.Context()
	b.ReportAllocs()
	user0, sys0 := cpuTimes()
	start := time.Now()
	b.ResetTimer()
	for i := range entries {
		if err := st.Append(ctx, entries[i]); err != nil {
			b.Fatal(err)
		}
		if (i+1)%batch == 0 || i == len(entries)-1 {
			if err := st.Flush(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	user, sys := cpuTimes()
	user, sys = user-user0, sys-sys0
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "settlements/s")
	b.ReportMetric(float64((user+sys).Microseconds())/float64(b.N), "cpu-µs/settlement")
	b.ReportMetric(float64(user.Microseconds())/float64(b.N), "user-µs/settlement")
	if err := st.Close(ctx); err != nil {
		b.Fatal(err)
	}
}
