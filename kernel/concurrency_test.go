package kernel

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConcurrentAdmitSettle runs admissions and settlements from many
// goroutines on shared scopes (run it with -race) and checks that the strict
// budget held at every observation and that the books balance at the end.
func TestConcurrentAdmitSettle(t *testing.T) {
	const (
		workers  = 8
		requests = 300
		limit    = 50_000
	)
	s := NewState()
	now := time.Date(2026, 3, 8, 12, 0, 0, 0, time.UTC)
	team := &Limits{MaxParallel: 5, Budgets: []BudgetWindow{{Limit: limit, Period: total}}}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		charged  Money
		admitted int
	)
	for w := range workers {
		wg.Go(func() {
			key := ScopeRef{Kind: ScopeKey, ID: "k" + strconv.Itoa(w)}
			for i := range requests {
				id := key.ID + "-" + strconv.Itoa(i)
				d := s.Admit(now, &AdmitRequest{
					ID:     id,
					Scopes: []Scope{{Ref: key, Limits: &Limits{MaxParallel: 2}}, {Ref: teamRef, Limits: team}, {Ref: globalRef}},
					Model:  "m", PromptBytes: 40, MaxTokens: 60, Price: onePrice,
				})
				spent, reserved := s.Usage(teamRef, total, now)
				if spent+reserved > limit || s.InFlight(teamRef) > 5 {
					t.Errorf("over the limit: spent %d reserved %d in flight %d", spent, reserved, s.InFlight(teamRef))
					return
				}
				if !d.Admitted {
					continue
				}
				// Usage within the bounds: the prompt and the (maybe clamped) max_tokens.
				st, ok := s.Settle(now, id, Usage{Input: int64(i % 40), Output: min(int64(i%60), d.MaxTokens)}, StatusCompleted)
				if !ok {
					t.Errorf("%s not settled", id)
					return
				}
				mu.Lock()
				charged += st.Cost
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Positive(t, admitted)
	spent, reserved := s.Usage(teamRef, total, now)
	require.Equal(t, charged, spent)
	require.Zero(t, reserved)
	require.LessOrEqual(t, spent, Money(limit))
	require.Zero(t, s.Pending())
	require.Zero(t, s.InFlight(teamRef))
	gspent, _ := s.Usage(globalRef, total, now)
	require.Equal(t, charged, gspent)
}
