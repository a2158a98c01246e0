package kernel

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// benchRequests builds one request per key, each on its key, a team of 100
// keys, an org and global, with rpm, tpm, parallel and two budget windows on the
// key and a budget on the team, like a gateway's hot path.
func benchRequests(keys int) []AdmitRequest {
	reqs := make([]AdmitRequest, keys)
	team := &Limits{RPM: 1 << 40, Budgets: []BudgetWindow{{Limit: 1 << 60, Period: Period{Kind: PeriodMonthly}}}}
	for i := range reqs {
		key := &Limits{
			RPM: 1 << 40, TPM: 1 << 50, MaxParallel: 1 << 20, Models: []string{"gpt-4o"},
			Budgets: []BudgetWindow{{Limit: 1 << 60, Period: Period{Kind: PeriodDaily}}, {Limit: 1 << 60, Period: Period{Kind: PeriodTotal}}},
		}
		reqs[i] = AdmitRequest{
			Scopes: []Scope{
				{Ref: ScopeRef{Kind: ScopeKey, ID: "key-" + strconv.Itoa(i)}, Limits: key},
				{Ref: ScopeRef{Kind: ScopeTeam, ID: "team-" + strconv.Itoa(i/100)}, Limits: team},
				{Ref: ScopeRef{Kind: ScopeOrg, ID: "org"}},
				{Ref: ScopeRef{Kind: ScopeGlobal}},
			},
			Model: "gpt-4o", PromptBytes: 2000, MaxTokens: 500,
			Price: Price{Input: 2500 * MicroUSD, Output: 10 * Dollar},
		}
	}
	return reqs
}

// benchIDs are reservation ids built before timing, as a gateway receives them.
func benchIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "req-" + strconv.Itoa(i)
	}
	return ids
}

func BenchmarkAdmitSettle(b *testing.B) {
	for _, keys := range []int{1, 1000, 100_000} {
		reqs := benchRequests(keys)
		ids := benchIDs(1 << 16)
		usage := Usage{Input: 500, Output: 200}
		name := "keys=" + strconv.Itoa(keys)
		if keys >= 1000 {
			name = "keys=" + strconv.Itoa(keys/1000) + "k"
		}
		b.Run(name, func(b *testing.B) {
			now := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)
			s := warmState(b, reqs, now)
			b.ReportAllocs()
			defer reportCPU(b)()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := &reqs[i%keys]
				req.ID = ids[i&(len(ids)-1)]
				if d := s.Admit(now, req); !d.Admitted {
					b.Fatalf("refused: %s", d.Reason)
				}
				if _, ok := s.Settle(now, req.ID, usage, StatusCompleted); !ok {
					b.Fatal("not settled")
				}
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			now := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)
			s := warmState(b, reqs, now)
			var next atomic.Int64
			b.ReportAllocs()
			defer reportCPU(b)()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1))
					req := reqs[i%keys] // a copy: each goroutine sets its own ID
					req.ID = ids[i&(len(ids)-1)]
					if d := s.Admit(now, &req); !d.Admitted {
						b.Errorf("refused: %s", d.Reason)
						return
					}
					if _, ok := s.Settle(now, req.ID, usage, StatusCompleted); !ok {
						b.Error("not settled")
						return
					}
				}
			})
		})
	}
}

// warmState is a State that has seen every key once, so that the benchmark
// measures the steady state rather than the creation of scopes.
func warmState(b *testing.B, reqs []AdmitRequest, now time.Time) *State {
	b.Helper()
	s := NewState()
	for i := range reqs {
		req := reqs[i]
		req.ID = "warm"
		if !s.Admit(now, &req).Admitted {
			b.Fatal("warm-up refused")
		}
		s.Settle(now, "warm", Usage{}, StatusCompleted)
	}
	return s
}

// reportCPU adds the process CPU time per operation (cpu-ns/op) to a
// benchmark: on a machine shared with other work, wall time per operation
// also counts the time spent waiting for a CPU.
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		end, _ := processCPU()
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
