package kernel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var (
	t0        = time.Date(2026, 3, 8, 12, 0, 30, 0, time.UTC) // 30 s into a minute
	keyRef    = ScopeRef{Kind: ScopeKey, ID: "k1"}
	teamRef   = ScopeRef{Kind: ScopeTeam, ID: "t1"}
	globalRef = ScopeRef{Kind: ScopeGlobal}
	total     = Period{Kind: PeriodTotal}
	daily     = Period{Kind: PeriodDaily}
	// onePrice makes costs easy: 1 nano-dollar per token of any kind.
	onePrice = Price{Input: 1_000_000, Output: 1_000_000}
)

// request is an AdmitRequest on key k1, team t1 and global with the given limits.
func request(id string, key, team *Limits) *AdmitRequest {
	return &AdmitRequest{
		ID:          id,
		Scopes:      []Scope{{Ref: keyRef, Limits: key}, {Ref: teamRef, Limits: team}, {Ref: globalRef}},
		Model:       "gpt-4o",
		PromptBytes: 100,
		MaxTokens:   50,
		Price:       onePrice,
	}
}

func TestAdmitReasons(t *testing.T) {
	tests := []struct {
		name     string
		key      *Limits
		team     *Limits
		prepare  func(s *State) // run before the request, at t0
		mutate   func(r *AdmitRequest)
		reason   Reason
		scope    ScopeRef
		retry    time.Duration
		admitted bool
	}{
		{name: "no limits", reason: ReasonOK, admitted: true},
		{name: "key expired", key: &Limits{ExpiresAt: t0}, reason: ReasonKeyExpired, scope: keyRef},
		{name: "key not yet expired", key: &Limits{ExpiresAt: t0.Add(time.Nanosecond)}, reason: ReasonOK, admitted: true},
		{name: "model not allowed", key: &Limits{Models: []string{"gpt-4o-mini"}}, reason: ReasonModelNotAllowed, scope: keyRef},
		{name: "model allowed", key: &Limits{Models: []string{"x", "gpt-4o"}}, reason: ReasonOK, admitted: true},
		{name: "team forbids model", team: &Limits{Models: []string{"x"}}, reason: ReasonModelNotAllowed, scope: teamRef},
		{
			name: "parallel limit", key: &Limits{MaxParallel: 1},
			prepare: func(s *State) { s.Admit(t0, request("other", &Limits{MaxParallel: 1}, nil)) },
			reason:  ReasonParallelLimit, scope: keyRef, retry: time.Second,
		},
		{
			name: "rpm limit", team: &Limits{RPM: 1},
			prepare: func(s *State) {
				s.Admit(t0, request("other", nil, nil))
				s.Settle(t0, "other", Usage{}, StatusCompleted)
			},
			reason: ReasonRequestLimit, scope: teamRef, retry: 30 * time.Second,
		},
		{name: "tpm limit", key: &Limits{TPM: 149}, reason: ReasonTokenLimit, scope: keyRef, retry: 30 * time.Second},
		{name: "tpm fits exactly", key: &Limits{TPM: 150}, reason: ReasonOK, admitted: true},
		{
			name: "budget exceeded", team: &Limits{Budgets: []BudgetWindow{{Limit: 100, Period: daily}}},
			reason: ReasonBudgetExceeded, scope: teamRef,
		},
		{
			name: "budget exceeded with reject", key: &Limits{Shortfall: Reject, Budgets: []BudgetWindow{{Limit: 149, Period: total}}},
			reason: ReasonBudgetExceeded, scope: keyRef,
		},
		{
			name: "budget fits exactly", key: &Limits{Shortfall: Reject, Budgets: []BudgetWindow{{Limit: 150, Period: total}}},
			reason: ReasonOK, admitted: true,
		},
		{
			name: "estimate admits under the limit", key: &Limits{Mode: Estimate, Budgets: []BudgetWindow{{Limit: 1, Period: daily}}},
			reason: ReasonOK, admitted: true,
		},
		{
			name: "estimate rejects at the limit", key: &Limits{Mode: Estimate, Budgets: []BudgetWindow{{Limit: 1, Period: daily}}},
			prepare: func(s *State) {
				s.Admit(t0, request("other", &Limits{Mode: Estimate, Budgets: []BudgetWindow{{Limit: 1, Period: daily}}}, nil))
				s.Settle(t0, "other", Usage{Input: 1}, StatusCompleted)
			},
			reason: ReasonBudgetExceeded, scope: keyRef,
		},
		{
			name:    "duplicate",
			prepare: func(s *State) { s.Admit(t0, request("r", nil, nil)) },
			reason:  ReasonDuplicate, scope: keyRef,
		},
		{
			name: "settled id may be reused",
			prepare: func(s *State) {
				s.Admit(t0, request("r", nil, nil))
				s.Settle(t0, "r", Usage{}, StatusCompleted)
			},
			reason: ReasonOK, admitted: true,
		},
		{
			name: "first failing check of the first scope decides", key: &Limits{RPM: 1, Models: []string{"x"}}, team: &Limits{ExpiresAt: t0},
			prepare: func(s *State) { s.Admit(t0, request("other", nil, nil)) },
			reason:  ReasonModelNotAllowed, scope: keyRef,
		},
		{
			name: "expiry before parallel", key: &Limits{MaxParallel: 1, ExpiresAt: t0},
			prepare: func(s *State) { s.Admit(t0, request("other", nil, nil)) },
			reason:  ReasonKeyExpired, scope: keyRef,
		},
		{
			name: "parallel before rpm", key: &Limits{MaxParallel: 1, RPM: 1},
			prepare: func(s *State) { s.Admit(t0, request("other", nil, nil)) },
			reason:  ReasonParallelLimit, scope: keyRef, retry: time.Second,
		},
		{
			name: "rpm before tpm", key: &Limits{RPM: 1, TPM: 1},
			prepare: func(s *State) { s.Admit(t0, request("other", nil, nil)) },
			reason:  ReasonRequestLimit, scope: keyRef, retry: 30 * time.Second,
		},
		{
			name: "tpm before budget", key: &Limits{TPM: 1, Budgets: []BudgetWindow{{Limit: 0, Period: total}}},
			reason: ReasonTokenLimit, scope: keyRef, retry: 30 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState()
			if tt.prepare != nil {
				tt.prepare(s)
			}
			before := snapshot(s, t0)
			req := request("r", tt.key, tt.team)
			if tt.mutate != nil {
				tt.mutate(req)
			}
			d := s.Admit(t0, req)
			require.Equal(t, tt.reason, d.Reason)
			require.Equal(t, tt.admitted, d.Admitted)
			require.Equal(t, tt.retry, d.RetryAfter)
			if !tt.admitted {
				require.Equal(t, tt.scope, d.Scope)
				require.Zero(t, d.Reserved)
				require.Equal(t, before, snapshot(s, t0), "a refusal reserves nothing")
			}
		})
	}
}

func TestAdmitReservesEverywhere(t *testing.T) {
	s := NewState()
	key := &Limits{Budgets: []BudgetWindow{{Limit: 10 * Dollar, Period: daily}, {Limit: 100 * Dollar, Period: total}}}
	team := &Limits{Budgets: []BudgetWindow{{Limit: 10 * Dollar, Period: Period{Kind: PeriodMonthly}}}}
	d := s.Admit(t0, request("r", key, team))
	require.True(t, d.Admitted)
	require.Equal(t, Money(150), d.Reserved) // 100 prompt bytes + 50 output tokens at 1 nano each
	require.Equal(t, int64(50), d.MaxTokens)
	require.False(t, d.Clamped)
	for _, c := range []struct {
		ref ScopeRef
		p   Period
	}{{keyRef, daily}, {keyRef, total}, {teamRef, Period{Kind: PeriodMonthly}}, {teamRef, total}, {globalRef, total}} {
		spent, reserved := s.Usage(c.ref, c.p, t0)
		require.Zero(t, spent)
		require.Equal(t, Money(150), reserved, "%s %s", c.ref, c.p)
	}
	require.Equal(t, int64(1), s.InFlight(keyRef))
	require.Equal(t, int64(1), s.InFlight(globalRef))
	require.Equal(t, 1, s.Pending())

	st, ok := s.Settle(t0.Add(time.Second), "r", Usage{Input: 20, Output: 10}, StatusCompleted)
	require.True(t, ok)
	require.Equal(t, Settlement{
		ID: "r", Scopes: []ScopeRef{keyRef, teamRef, globalRef}, Model: "gpt-4o",
		Usage: Usage{Input: 20, Output: 10}, Cost: 30, Reserved: 150, Status: StatusCompleted,
		AdmittedAt: t0, SettledAt: t0.Add(time.Second),
	}, st)
	for _, ref := range []ScopeRef{keyRef, teamRef, globalRef} {
		spent, reserved := s.Usage(ref, total, t0)
		require.Equal(t, Money(30), spent)
		require.Zero(t, reserved)
		require.Zero(t, s.InFlight(ref))
	}
	require.Zero(t, s.Pending())

	_, ok = s.Settle(t0.Add(2*time.Second), "r", Usage{Input: 20, Output: 10}, StatusCompleted)
	require.False(t, ok, "settle twice")
	spent, _ := s.Usage(keyRef, total, t0)
	require.Equal(t, Money(30), spent)
}

func TestAdmitWorstCase(t *testing.T) {
	price := Price{Input: 2_000_000, CachedInput: 1_000_000, CacheWrite: 3_000_000, Output: 5_000_000, Reasoning: 7_000_000}
	tests := []struct {
		name          string
		maxTokens     int64
		defaultTokens int64
		wantBound     int64
	}{
		{"max_tokens", 10, 99, 10},
		{"model default", 0, 20, 20},
		{"fallback", 0, 0, 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState()
			req := &AdmitRequest{ID: "r", Scopes: []Scope{{Ref: keyRef}}, PromptBytes: 100, MaxTokens: tt.maxTokens, DefaultMaxTokens: tt.defaultTokens, Price: price}
			d := s.Admit(t0, req)
			require.True(t, d.Admitted)
			require.Equal(t, tt.wantBound, d.MaxTokens)
			require.Equal(t, Money(100*3+tt.wantBound*7), d.Reserved)
			require.Equal(t, WorstCost(price, 100, tt.wantBound), d.Reserved)
		})
	}
}

func TestAdmitClamp(t *testing.T) {
	budget := func(limit Money, sf Shortfall) *Limits {
		return &Limits{Shortfall: sf, Budgets: []BudgetWindow{{Limit: limit, Period: daily}}}
	}
	tests := []struct {
		name      string
		key, team *Limits
		admitted  bool
		maxTokens int64
		clamped   bool
		reserved  Money
		scope     ScopeRef
	}{
		{name: "fits", key: budget(150, Clamp), admitted: true, maxTokens: 50, reserved: 150},
		{name: "clamped by key", key: budget(120, Clamp), admitted: true, maxTokens: 20, clamped: true, reserved: 120},
		{name: "clamped by team, tightest wins", key: budget(140, Clamp), team: budget(105, Clamp), admitted: true, maxTokens: 5, clamped: true, reserved: 105},
		{name: "one token is the floor", key: budget(101, Clamp), admitted: true, maxTokens: 1, clamped: true, reserved: 101},
		{name: "not even one token", key: budget(100, Clamp), scope: keyRef},
		{name: "team cannot afford one token", key: budget(1000, Clamp), team: budget(100, Clamp), scope: teamRef},
		{name: "reject policy", key: budget(149, Reject), scope: keyRef},
		{name: "key policy applies to team", key: budget(1000, Reject), team: budget(149, Clamp), scope: teamRef},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState()
			d := s.Admit(t0, request("r", tt.key, tt.team))
			require.Equal(t, tt.admitted, d.Admitted)
			if !tt.admitted {
				require.Equal(t, ReasonBudgetExceeded, d.Reason)
				require.Equal(t, tt.scope, d.Scope)
				require.Zero(t, d.RetryAfter)
				return
			}
			require.Equal(t, tt.maxTokens, d.MaxTokens)
			require.Equal(t, tt.clamped, d.Clamped)
			require.Equal(t, tt.reserved, d.Reserved)
			_, reserved := s.Usage(keyRef, daily, t0)
			require.Equal(t, tt.reserved, reserved)
		})
	}
}

func TestClampRoundsLikeCost(t *testing.T) {
	// 0.4 nano per input token, 0.3 nano per output token: 100 bytes → 40,
	// budget 46 → (46e6 − 40e6)/300000 = 20 output tokens → worst exactly 46.
	price := Price{Input: 400_000, Output: 300_000}
	s := NewState()
	req := &AdmitRequest{ID: "r", Scopes: []Scope{{Ref: keyRef, Limits: &Limits{Budgets: []BudgetWindow{{Limit: 46, Period: total}}}}}, PromptBytes: 100, MaxTokens: 1000, Price: price}
	d := s.Admit(t0, req)
	require.True(t, d.Admitted)
	require.Equal(t, int64(20), d.MaxTokens)
	require.Equal(t, Money(46), d.Reserved)
	require.Equal(t, WorstCost(price, 100, 20), d.Reserved)
	require.Greater(t, WorstCost(price, 100, 21), Money(46))
}

func TestRateLimitInfo(t *testing.T) {
	s := NewState()
	key := &Limits{RPM: 10, TPM: 1000}
	team := &Limits{RPM: 3, TPM: 10_000}
	d := s.Admit(t0, request("a", key, team))
	require.True(t, d.Admitted)
	require.Equal(t, RateLimitInfo{
		LimitRequests: 3, RemainingRequests: 2, ResetRequests: 30 * time.Second,
		LimitTokens: 1000, RemainingTokens: 850, ResetTokens: 30 * time.Second,
	}, d.RateLimit)

	// tpm is corrected to the actual usage in the same minute.
	_, ok := s.Settle(t0.Add(10*time.Second), "a", Usage{Input: 10, Output: 5}, StatusCompleted)
	require.True(t, ok)
	d = s.Admit(t0.Add(20*time.Second), request("b", key, team))
	require.True(t, d.Admitted)
	require.Equal(t, int64(1000-15-150), d.RateLimit.RemainingTokens)
	require.Equal(t, int64(1), d.RateLimit.RemainingRequests)
	require.Equal(t, 10*time.Second, d.RateLimit.ResetRequests)

	// Not corrected once the minute is over.
	_, ok = s.Settle(t0.Add(31*time.Second), "b", Usage{Input: 1}, StatusCompleted)
	require.True(t, ok)
	d = s.Admit(t0.Add(31*time.Second), request("c", key, team))
	require.True(t, d.Admitted)
	require.Equal(t, int64(2), d.RateLimit.RemainingRequests)
	require.Equal(t, int64(850), d.RateLimit.RemainingTokens)

	// Refused: the counts are unchanged.
	require.True(t, s.Admit(t0.Add(32*time.Second), request("d", key, team)).Admitted)
	require.True(t, s.Admit(t0.Add(32*time.Second), request("e", key, team)).Admitted)
	for range 2 {
		d = s.Admit(t0.Add(33*time.Second), request("f", key, team))
		require.Equal(t, ReasonRequestLimit, d.Reason)
		require.Equal(t, teamRef, d.Scope)
		require.Equal(t, int64(0), d.RateLimit.RemainingRequests)
		require.Equal(t, int64(1000-450), d.RateLimit.RemainingTokens)
		require.Equal(t, 57*time.Second, d.RetryAfter)
	}
}

func TestEstimateMode(t *testing.T) {
	s := NewState()
	key := &Limits{Mode: Estimate, TPM: 26, Budgets: []BudgetWindow{{Limit: 100, Period: daily}}}
	d := s.Admit(t0, request("a", key, nil))
	require.True(t, d.Admitted)
	require.Zero(t, d.Reserved)
	require.Equal(t, int64(50), d.MaxTokens)
	require.Equal(t, int64(1), d.RateLimit.RemainingTokens) // ceil(100/4) = 25 tokens
	_, reserved := s.Usage(keyRef, daily, t0)
	require.Zero(t, reserved)
	// The last request of a window may overshoot by its own cost.
	st, ok := s.Settle(t0, "a", Usage{Input: 100, Output: 50}, StatusCompleted)
	require.True(t, ok)
	require.Zero(t, st.Reserved)
	require.Equal(t, Money(150), st.Cost)
	spent, _ := s.Usage(keyRef, daily, t0)
	require.Equal(t, Money(150), spent)
	require.Equal(t, ReasonTokenLimit, s.Admit(t0, request("b", key, nil)).Reason)
	require.Equal(t, ReasonBudgetExceeded, s.Admit(t0.Add(time.Minute), request("b", key, nil)).Reason)
	// A new day, a new budget.
	require.True(t, s.Admit(t0.Add(24*time.Hour), request("b", key, nil)).Admitted)
}

func TestExpire(t *testing.T) {
	s := NewState()
	key := &Limits{MaxParallel: 1, Budgets: []BudgetWindow{{Limit: Dollar, Period: daily}}}
	req := request("a", key, nil)
	req.Lease = time.Minute
	require.True(t, s.Admit(t0, req).Admitted)
	require.Equal(t, ReasonParallelLimit, s.Admit(t0, request("b", key, nil)).Reason)

	require.Empty(t, s.Expire(t0.Add(time.Minute-time.Nanosecond)))
	got := s.Expire(t0.Add(time.Minute))
	require.Equal(t, []Settlement{{
		ID: "a", Scopes: []ScopeRef{keyRef, teamRef, globalRef}, Model: "gpt-4o", Cost: 150, Reserved: 150,
		Status: StatusExpired, AdmittedAt: t0, SettledAt: t0.Add(time.Minute),
	}}, got)
	spent, reserved := s.Usage(keyRef, daily, t0.Add(time.Minute))
	require.Equal(t, Money(150), spent)
	require.Zero(t, reserved)
	require.Zero(t, s.Pending())
	require.True(t, s.Admit(t0.Add(time.Minute), request("b", key, nil)).Admitted, "the parallel slot is free")
	_, ok := s.Settle(t0.Add(time.Minute), "a", Usage{}, StatusCompleted)
	require.False(t, ok, "an expired reservation cannot be settled")

	// Default lease and order of expiry.
	s = NewState()
	for i, lease := range []time.Duration{3 * time.Second, 0, time.Second} {
		r := request(string(rune('x'+i)), nil, nil)
		r.Lease = lease
		require.True(t, s.Admit(t0, r).Admitted)
	}
	got = s.Expire(t0.Add(5 * time.Second))
	require.Len(t, got, 2)
	require.Equal(t, "z", got[0].ID)
	require.Equal(t, "x", got[1].ID)
	require.Empty(t, s.Expire(t0.Add(DefaultLease-time.Nanosecond)))
	require.Len(t, s.Expire(t0.Add(DefaultLease)), 1)
}

func TestWindowResetReleasesNothingTwice(t *testing.T) {
	s := NewState()
	key := &Limits{Budgets: []BudgetWindow{{Limit: Dollar, Period: daily}}}
	require.True(t, s.Admit(t0, request("a", key, nil)).Admitted)
	next := time.Date(2026, 3, 9, 0, 0, 0, 0, time.UTC)
	require.True(t, s.Admit(next, request("b", key, nil)).Admitted)
	_, reserved := s.Usage(keyRef, daily, next)
	require.Equal(t, Money(150), reserved, "only b is reserved in the new day")
	// a was reserved yesterday: settling it releases nothing today and charges today.
	_, ok := s.Settle(next, "a", Usage{Input: 1}, StatusCompleted)
	require.True(t, ok)
	spent, reserved := s.Usage(keyRef, daily, next)
	require.Equal(t, Money(1), spent)
	require.Equal(t, Money(150), reserved)
	// The total window was never reset: a's reservation is released there.
	spent, reserved = s.Usage(keyRef, total, next)
	require.Equal(t, Money(1), spent)
	require.Equal(t, Money(150), reserved)
	// Just before the next midnight the day still counts; at midnight it resets.
	spent, _ = s.Usage(keyRef, daily, next.Add(24*time.Hour-time.Nanosecond))
	require.Equal(t, Money(1), spent)
	spent, reserved = s.Usage(keyRef, daily, next.Add(24*time.Hour))
	require.Zero(t, spent)
	require.Zero(t, reserved)
}

func TestSeed(t *testing.T) {
	s := NewState()
	day := time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)
	key := &Limits{Budgets: []BudgetWindow{{Limit: Dollar, Period: daily}}}
	s.Seed(keyRef, daily, day, Dollar-150)
	spent, _ := s.Usage(keyRef, daily, t0)
	require.Equal(t, Dollar-150, spent)
	require.True(t, s.Admit(t0, request("a", key, nil)).Admitted)
	require.Equal(t, ReasonBudgetExceeded, s.Admit(t0, request("b", key, nil)).Reason)

	// Seeding the same window again replaces spent and keeps the reservation.
	s.Seed(keyRef, daily, day.Add(time.Hour), 10)
	spent, reserved := s.Usage(keyRef, daily, t0)
	require.Equal(t, Money(10), spent)
	require.Equal(t, Money(150), reserved)

	// An older window is ignored; a newer one replaces the tracked window.
	s.Seed(keyRef, daily, day.Add(-24*time.Hour), 999)
	spent, _ = s.Usage(keyRef, daily, t0)
	require.Equal(t, Money(10), spent)
	s.Seed(keyRef, daily, day.Add(24*time.Hour), 7)
	spent, reserved = s.Usage(keyRef, daily, day.Add(25*time.Hour))
	require.Equal(t, Money(7), spent)
	require.Zero(t, reserved)
	// a was reserved in the old day: settling releases nothing from the new one.
	_, ok := s.Settle(day.Add(25*time.Hour), "a", Usage{Input: 3}, StatusCompleted)
	require.True(t, ok)
	spent, reserved = s.Usage(keyRef, daily, day.Add(25*time.Hour))
	require.Equal(t, Money(10), spent)
	require.Zero(t, reserved)

	// Total and untracked periods.
	s.Seed(teamRef, total, time.Time{}, 5*Dollar)
	spent, _ = s.Usage(teamRef, total, t0)
	require.Equal(t, 5*Dollar, spent)
	spent, reserved = s.Usage(teamRef, Period{Kind: PeriodWeekly}, t0)
	require.Zero(t, spent)
	require.Zero(t, reserved)
	spent, _ = s.Usage(ScopeRef{Kind: ScopeOrg, ID: "none"}, total, t0)
	require.Zero(t, spent)
	require.Zero(t, s.InFlight(ScopeRef{Kind: ScopeOrg, ID: "none"}))
}

func TestSettleMinimalRequest(t *testing.T) {
	s := NewState()
	d := s.Admit(t0, &AdmitRequest{ID: "solo"})
	require.True(t, d.Admitted)
	st, ok := s.Settle(t0, "solo", Usage{Input: 5}, StatusAborted)
	require.True(t, ok)
	require.Empty(t, st.Scopes)
	require.Equal(t, StatusAborted, st.Status)
}

// stateSnapshot is everything observable in a State, for comparisons in tests.
type stateSnapshot struct {
	Scopes map[ScopeRef]scopeSnapshot
	Open   map[string]reservationSnapshot
}

type scopeSnapshot struct {
	InFlight, Requests, Tokens int64
	Windows                    map[string][2]Money
}

type reservationSnapshot struct {
	Worst, Reserved Money
	Tokens          int64
	Deadline        int64
}

// snapshot copies what s holds at now: counters of past minutes and windows are
// zero, and zero counters are left out.
func snapshot(s *State, now time.Time) stateSnapshot {
	nowN := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := stateSnapshot{Scopes: map[ScopeRef]scopeSnapshot{}, Open: map[string]reservationSnapshot{}}
	for ref, st := range s.scopes {
		ss := scopeSnapshot{InFlight: st.inFlight, Windows: map[string][2]Money{}}
		if st.minute >= floorDiv(nowN, nanosPerMinute) {
			ss.Requests, ss.Tokens = st.requests, st.tokens
		}
		for i := range st.windows {
			w := &st.windows[i]
			s.roll(w, now, nowN)
			if w.spent != 0 || w.reserved != 0 {
				ss.Windows[w.period.String()] = [2]Money{w.spent, w.reserved}
			}
		}
		if ss.InFlight != 0 || ss.Requests != 0 || ss.Tokens != 0 || len(ss.Windows) > 0 {
			out.Scopes[ref] = ss
		}
	}
	for id, r := range s.open {
		out.Open[id] = reservationSnapshot{Worst: r.worst, Reserved: r.reserved, Tokens: r.tokens, Deadline: r.deadline}
	}
	return out
}

func TestSoftBudgetPassesAndWarns(t *testing.T) {
	s := NewState()
	// The team's daily budget is soft ($0.000000200): it neither clamps nor
	// refuses; the key's strict total budget still does.
	team := &Limits{Budgets: []BudgetWindow{{Limit: 200, Period: daily, Soft: true}}}
	key := &Limits{Budgets: []BudgetWindow{{Limit: 1000, Period: total}}}
	for i := range 3 {
		id := string(rune('a' + i))
		d := s.Admit(t0, request(id, key, team))
		require.True(t, d.Admitted, "request %d", i)
		require.False(t, d.Clamped)
		if i < 2 {
			require.Nil(t, d.Warnings, "request %d: under the soft limit", i)
		} else {
			require.Equal(t, []BudgetWarning{{Scope: teamRef, Period: daily, Limit: 200, Spent: 300}}, d.Warnings)
		}
		_, ok := s.Settle(t0, id, Usage{Input: 100, Output: 50}, StatusCompleted)
		require.True(t, ok)
	}
	spent, _ := s.Usage(teamRef, daily, t0)
	require.Equal(t, Money(450), spent, "the soft window counts past its limit")
	// The strict key budget ($1000 nano) refuses once 900 is spent and 150 more would not fit.
	for i := 3; i < 6; i++ {
		s.Admit(t0, request(string(rune('a'+i)), key, team))
		s.Settle(t0, string(rune('a'+i)), Usage{Input: 100, Output: 50}, StatusCompleted)
	}
	r := request("z", key, team)
	r.MaxTokens = 0
	d := s.Admit(t0, r)
	require.False(t, d.Admitted)
	require.Equal(t, ReasonBudgetExceeded, d.Reason)
	require.Equal(t, keyRef, d.Scope)
}

func TestRunBudgetStopsALoop(t *testing.T) {
	s := NewState()
	pol := RunPolicy{Budget: 1000, RPM: 100, TTL: time.Hour}
	run := Scope{Ref: ScopeRef{Kind: ScopeRun, ID: RunScopeID(keyRef, "agent-1")}, Limits: pol.Limits()}
	require.Equal(t, "key:k1/agent-1", run.Ref.ID)
	admitted := 0
	for i := range 50 {
		r := request("a"+string(rune('0'+i/10))+string(rune('0'+i%10)), &Limits{Shortfall: Reject}, nil)
		r.Scopes = []Scope{r.Scopes[0], run, r.Scopes[1], r.Scopes[2]}
		d := s.Admit(t0, r)
		if !d.Admitted {
			require.Equal(t, ReasonBudgetExceeded, d.Reason)
			require.Equal(t, run.Ref, d.Scope)
			continue
		}
		admitted++
		_, ok := s.Settle(t0, r.ID, Usage{Input: 100, Output: 50}, StatusCompleted)
		require.True(t, ok)
	}
	require.Equal(t, 6, admitted, "150 a call, 1000 the run's budget")
	spent, reserved := s.Usage(run.Ref, total, t0)
	require.Equal(t, Money(900), spent)
	require.Zero(t, reserved)
	// Another run of the same key has a budget of its own.
	other := Scope{Ref: ScopeRef{Kind: ScopeRun, ID: RunScopeID(keyRef, "agent-2")}, Limits: pol.Limits()}
	r := request("b", nil, nil)
	r.Scopes = []Scope{r.Scopes[0], other, r.Scopes[1], r.Scopes[2]}
	require.True(t, s.Admit(t0, r).Admitted)
}

func TestRunScopeForgotten(t *testing.T) {
	s := NewState()
	run := Scope{Ref: ScopeRef{Kind: ScopeRun, ID: "key:k1/r"}, Limits: (&RunPolicy{Budget: 1000, TTL: time.Hour}).Limits()}
	r := request("a", nil, nil)
	r.Scopes = []Scope{r.Scopes[0], run}
	r.Lease = 3 * time.Hour
	require.True(t, s.Admit(t0, r).Admitted)
	// In flight past the TTL: kept.
	s.Expire(t0.Add(2 * time.Hour))
	require.True(t, s.Known(run.Ref))
	_, ok := s.Settle(t0.Add(2*time.Hour), "a", Usage{Input: 100}, StatusCompleted)
	require.True(t, ok)
	s.Expire(t0.Add(2*time.Hour + 59*time.Minute))
	require.True(t, s.Known(run.Ref), "idle since its settlement at 2h, not its admission")
	spent, _ := s.Usage(run.Ref, total, t0.Add(2*time.Hour))
	require.Equal(t, Money(100), spent)
	s.Expire(t0.Add(3 * time.Hour))
	require.False(t, s.Known(run.Ref), "idle for its TTL: forgotten")
	require.True(t, s.Known(keyRef), "scopes without a TTL stay")
	require.ErrorIs(t, (&Limits{TTL: -1}).Validate(), ErrBadLimits)
	require.ErrorIs(t, (&Limits{Run: &RunPolicy{Budget: -1}}).Validate(), ErrBadLimits)
}

// TestSettleAt: a settlement at another price charges the usage at that
// price, releases what the admission reserved, and is unpriced only when
// that price is.
func TestSettleAt(t *testing.T) {
	s := NewState()
	key := ScopeRef{Kind: ScopeKey, ID: "k"}
	day := Period{Kind: PeriodDaily}
	lim := &Limits{Budgets: []BudgetWindow{{Limit: 10 * Dollar, Period: day}}}
	admitted := Price{Input: 1_000_000} // one call at $0.001
	served := Price{Input: 3 * Dollar, Output: 5 * Dollar}
	u := Usage{Input: 100, Output: 20}
	for i, p := range []Price{served, {Unpriced: true}} {
		id := string(rune('a' + i))
		require.True(t, s.Admit(t0, &AdmitRequest{ID: id, Scopes: []Scope{{Ref: key, Limits: lim}}, PromptBytes: 1, DefaultMaxTokens: 1, Price: admitted}).Admitted)
		st, ok := s.SettleAt(t0, id, u, p, StatusCompleted)
		require.True(t, ok)
		require.Equal(t, Cost(p, u), st.Cost)
		require.Equal(t, p.Unpriced, st.Unpriced)
		_, ok = s.SettleAt(t0, id, u, p, StatusCompleted)
		require.False(t, ok, "once")
	}
	spent, reserved := s.Usage(key, day, t0)
	require.Zero(t, reserved)
	require.Equal(t, Cost(served, u), spent)
}
