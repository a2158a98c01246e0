package accounting_test

import (
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
)

// BenchmarkAdmitSettle: admit + settle pairs through Redis from 64 concurrent
// callers (b.SetParallelism × GOMAXPROCS), each request on a key, a team and
// the global scope, with rpm, tpm, parallel and a daily budget on the key.
func BenchmarkAdmitSettle(b *testing.B) {
	for _, callers := range []int{64, 8} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) { benchAdmitSettle(b, callers) })
	}
}

func benchAdmitSettle(b *testing.B, callers int) {
	rdb := client(b)
	pfx := prefix(b, rdb)
	c := accounting.NewRedisCounters(rdb, zeroSeed, accounting.WithPrefix(pfx))
	b.Cleanup(c.Close)
	ctx := b.Context()
	lim := &kernel.Limits{
		RPM: 1 << 40, TPM: 1 << 50, MaxParallel: 1 << 20,
		Budgets: []kernel.BudgetWindow{{Limit: 1 << 50, Period: kernel.Period{Kind: kernel.PeriodDaily}}},
	}
	team := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t"}, Limits: &kernel.Limits{RPM: 1 << 40}}
	global := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeGlobal}}
	price := kernel.Price{Input: 2_500_000_000, Output: 10_000_000_000}
	var seq atomic.Int64
	b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			id := "p" + strconv.FormatInt(i, 36)
			key := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k" + strconv.FormatInt(i%50, 10)}, Limits: lim}
			now := time.Now()
			d, err := c.Admit(ctx, now, &kernel.AdmitRequest{
				ID: id, Scopes: []kernel.Scope{key, team, global}, Model: "m", PromptBytes: 2000, MaxTokens: 256, Price: price,
			})
			if err != nil || !d.Admitted {
				b.Errorf("admit: %v %+v", err, d)
				return
			}
			if _, ok, err := c.Settle(ctx, now, id, kernel.Usage{Input: 500, Output: 100}, kernel.StatusCompleted); err != nil || !ok {
				b.Errorf("settle: %v %v", ok, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "pairs/s")
}
