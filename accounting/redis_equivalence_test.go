package accounting_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
)

// TestSameAsKernel runs generated operation sequences against kernel.State and
// against Counters and requires identical decisions, settlements and spend.
func TestSameAsKernel(t *testing.T) {
	rdb := client(t)
	rapid.Check(t, func(rt *rapid.T) {
		ctx := t.Context()
		p := prefix(t, rdb)
		k := kernel.NewState()
		c := accounting.NewRedisCounters(rdb, zeroSeed, accounting.WithPrefix(p))
		defer c.Close()

		daily := kernel.Period{Kind: kernel.PeriodDaily}
		total := kernel.Period{Kind: kernel.PeriodTotal}
		rolling := kernel.Period{Kind: kernel.PeriodRolling, Every: 3 * time.Minute}
		money := func(name string, lo, hi int64) kernel.Money {
			return kernel.Money(rapid.Int64Range(lo, hi).Draw(rt, name))
		}
		limits := func(name string, key bool) *kernel.Limits {
			if !key && rapid.Bool().Draw(rt, name+"-nil") {
				return nil
			}
			l := &kernel.Limits{
				RPM:         rapid.Int64Range(0, 6).Draw(rt, name+"-rpm"),
				TPM:         rapid.SampledFrom([]int64{0, 2000, 20000}).Draw(rt, name+"-tpm"),
				MaxParallel: rapid.Int64Range(0, 4).Draw(rt, name+"-par"),
			}
			if rapid.Bool().Draw(rt, name+"-daily") {
				l.Budgets = append(l.Budgets, kernel.BudgetWindow{Limit: money(name+"-dl", 0, 400_000), Period: daily})
			}
			if rapid.Bool().Draw(rt, name+"-total") {
				l.Budgets = append(l.Budgets, kernel.BudgetWindow{Limit: money(name+"-tl", 0, 900_000), Period: total})
			}
			if rapid.Bool().Draw(rt, name+"-rolling") {
				l.Budgets = append(l.Budgets, kernel.BudgetWindow{Limit: money(name+"-rl", 0, 300_000), Period: rolling})
			}
			if rapid.Bool().Draw(rt, name+"-soft") { // a soft window only warns
				p := rapid.SampledFrom([]kernel.Period{daily, total, rolling}).Draw(rt, name+"-softp")
				l.Budgets = append(l.Budgets, kernel.BudgetWindow{Limit: money(name+"-sl", 0, 200_000), Period: p, Soft: true})
			}
			if rapid.Bool().Draw(rt, name+"-models") {
				l.Models = []string{"small"}
			}
			if key {
				l.Mode = kernel.BudgetMode(rapid.IntRange(0, 1).Draw(rt, name+"-mode"))
				l.Shortfall = kernel.Shortfall(rapid.IntRange(0, 1).Draw(rt, name+"-short"))
			}
			return l
		}
		global := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeGlobal}, Limits: limits("global", false)}
		team := kernel.Scope{Ref: kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t1"}, Limits: limits("team", false)}
		keys := []kernel.Scope{
			{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k1"}, Limits: limits("k1", true)},
			{Ref: kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k2"}, Limits: limits("k2", true)},
		}
		if rapid.Bool().Draw(rt, "k2-expires") {
			keys[1].Limits.ExpiresAt = time.Date(2026, 11, 30, 23, 59, 30, 0, time.UTC)
		}
		// Runs of k1 with a run policy; their TTL outlives the test (the kernel
		// forgets idle runs on Expire, Redis on its own clock).
		pol := kernel.RunPolicy{Budget: money("run-budget", 0, 300_000), RPM: rapid.Int64Range(0, 6).Draw(rt, "run-rpm"), TTL: 10 * time.Hour}
		runs := []kernel.Scope{
			{Ref: kernel.ScopeRef{Kind: kernel.ScopeRun, ID: kernel.RunScopeID(keys[0].Ref, "a")}, Limits: pol.Limits()},
			{Ref: kernel.ScopeRef{Kind: kernel.ScopeRun, ID: kernel.RunScopeID(keys[0].Ref, "b")}, Limits: pol.Limits()},
		}
		price := kernel.Price{
			Input:  money("in", 0, 3_000_000),
			Output: money("out", 1, 12_000_000),
		}
		if rapid.Bool().Draw(rt, "reasoning") {
			price.Reasoning = money("rsn", 0, 20_000_000)
		}

		now := time.Date(2026, 11, 30, 23, 57, 0, 0, time.UTC)
		var open []string
		next := 0
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for step := range steps {
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); {
			case op <= 4: // admit
				ki := rapid.IntRange(0, 1).Draw(rt, "key")
				id := fmt.Sprintf("r%d", next)
				if len(open) > 0 && rapid.IntRange(0, 9).Draw(rt, "dup") == 0 {
					id = open[0]
				} else {
					next++
				}
				scopes := []kernel.Scope{keys[ki], team, global}
				if r := rapid.IntRange(0, 2).Draw(rt, "run"); r > 0 { // one more level: a run of the key
					scopes = []kernel.Scope{keys[ki], runs[r-1], team, global}
				}
				req := &kernel.AdmitRequest{
					ID:               id,
					Scopes:           scopes,
					Model:            rapid.SampledFrom([]string{"small", "large"}).Draw(rt, "model"),
					PromptBytes:      rapid.Int64Range(0, 3000).Draw(rt, "prompt"),
					MaxTokens:        rapid.SampledFrom([]int64{0, 1, 50, 500, 2000}).Draw(rt, "max"),
					DefaultMaxTokens: rapid.SampledFrom([]int64{0, 300}).Draw(rt, "defmax"),
					Price:            price,
					Lease:            time.Duration(rapid.IntRange(0, 240).Draw(rt, "lease")) * time.Second,
				}
				if rapid.IntRange(0, 7).Draw(rt, "unpriced") == 0 { // a model nobody priced (kernel.UnpricedRefusal)
					req.Price = kernel.Price{Unpriced: true}
				}
				want := k.Admit(now, req)
				got, err := c.Admit(ctx, now, req)
				require.NoError(rt, err)
				require.Equal(rt, want, got, "step %d admit %s", step, id)
				if got.Admitted {
					open = append(open, id)
				}
			case op <= 6 && len(open) > 0: // settle
				i := rapid.IntRange(0, len(open)-1).Draw(rt, "which")
				id := open[i]
				u := kernel.Usage{
					Input:     rapid.Int64Range(0, 3000).Draw(rt, "uin"),
					Output:    rapid.Int64Range(0, 2000).Draw(rt, "uout"),
					Reasoning: rapid.Int64Range(0, 100).Draw(rt, "ursn"),
				}
				st := kernel.Status(rapid.IntRange(0, 2).Draw(rt, "status"))
				want, wok := k.Settle(now, id, u, st)
				got, gok, err := c.Settle(ctx, now, id, u, st)
				require.NoError(rt, err)
				require.Equal(rt, wok, gok, "step %d settle %s", step, id)
				requireSettlement(rt, want, got)
				if rapid.Bool().Draw(rt, "again") { // settling twice changes nothing
					_, again, err := c.Settle(ctx, now, id, u, st)
					require.NoError(rt, err)
					require.False(rt, again)
				}
				open = slices.Delete(open, i, i+1)
			case op == 7: // expire
				want := k.Expire(now)
				got, err := c.Expire(ctx, now)
				require.NoError(rt, err)
				require.Len(rt, got, len(want), "step %d expire", step)
				byID := func(a, b kernel.Settlement) int { return strings.Compare(a.ID, b.ID) }
				slices.SortFunc(want, byID)
				slices.SortFunc(got, byID)
				for i := range want {
					requireSettlement(rt, want[i], got[i])
					open = slices.DeleteFunc(open, func(id string) bool { return id == want[i].ID })
				}
			default: // time passes
				now = now.Add(time.Duration(rapid.Int64Range(0, 100_000).Draw(rt, "advance")) * time.Millisecond)
			}
		}
		// Spend and reservations of every window agree.
		for _, sc := range []kernel.Scope{keys[0], keys[1], runs[0], runs[1], team, global} {
			if sc.Limits == nil {
				continue
			}
			for _, b := range sc.Limits.Budgets {
				ws, wr := k.Usage(sc.Ref, b.Period, now)
				gs, gr, err := c.Usage(ctx, sc.Ref, b.Period, now)
				require.NoError(rt, err)
				require.Equal(rt, [2]kernel.Money{ws, wr}, [2]kernel.Money{gs, gr}, "%v %v", sc.Ref, b.Period)
			}
			inFlight, err := c.InFlight(ctx, sc.Ref)
			require.NoError(rt, err)
			require.Equal(rt, k.InFlight(sc.Ref), inFlight, "in flight %v", sc.Ref)
		}
	})
}

func requireSettlement(t require.TestingT, want, got kernel.Settlement) {
	require.True(t, want.AdmittedAt.Equal(got.AdmittedAt), "admitted at %v vs %v", want.AdmittedAt, got.AdmittedAt)
	require.True(t, want.SettledAt.Equal(got.SettledAt))
	want.AdmittedAt, got.AdmittedAt, want.SettledAt, got.SettledAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if len(want.Scopes) == 0 && len(got.Scopes) == 0 {
		want.Scopes, got.Scopes = nil, nil
	}
	require.Equal(t, want, got)
}
