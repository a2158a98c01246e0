package postgres_test

import (
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store/postgres"
)

// BenchmarkDurableSettlements appends ledger entries from concurrent callers
// (GOMAXPROCS×16 goroutines) and flushes: durable settlements per second, and
// the ledger transactions (and PostgreSQL commits) per second it took.
// The sub-benchmarks sweep the number of writers and the batch size.
func BenchmarkDurableSettlements(b *testing.B) {
	for _, writers := range []int{1, 4, 8} {
		for _, batch := range []int{512, 1024, 4096} {
			b.Run(fmt.Sprintf("writers=%d/batch=%d", writers, batch), func(b *testing.B) {
				benchSettlements(b, postgres.WithWriters(writers), postgres.WithBatchSize(batch))
			})
		}
	}
}

func benchSettlements(b *testing.B, opts ...postgres.Option) {
	s := open(b, testenv.FreshPostgres(b), opts...)
	ctx := b.Context()
	var seq atomic.Int64
	var xact0 int64
	db := s.Pool().Config().ConnConfig.Database
	readXact := func() int64 {
		var v int64
		require.NoError(b, s.Pool().QueryRow(ctx,
			`SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, db).Scan(&v))
		return v
	}
	batches0 := s.Stats().Batches
	xact0 = readXact()
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			e := entry("bench-"+strconv.FormatInt(i, 36), fmt.Sprintf("k%d", i%100), fmt.Sprintf("t%d", i%10),
				kernel.Money(i%1000+1), hour0.Add(time.Duration(i)*time.Millisecond))
			if err := s.Append(ctx, e); err != nil {
				b.Error(err)
				return
			}
		}
	})
	require.NoError(b, s.Flush(ctx))
	elapsed := time.Since(start)
	b.StopTimer()
	time.Sleep(600 * time.Millisecond) // pg_stat_database is updated by the stats collector
	batches := s.Stats().Batches - batches0
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "settlements/s")
	b.ReportMetric(float64(batches)/elapsed.Seconds(), "ledger_tx/s")
	b.ReportMetric(float64(readXact()-xact0)/elapsed.Seconds(), "pg_commits/s")
	b.ReportMetric(float64(b.N)/float64(max(batches, 1)), "entries/tx")
}
