package kernel

import (
	"math"
	"slices"
	"sync"
	"time"
)

// DefaultOutputBound bounds the output of a request that gives neither
// MaxTokens nor DefaultMaxTokens.
const DefaultOutputBound = 4096

// parallelRetry is the RetryAfter of ReasonParallelLimit.
const parallelRetry = time.Second

const nanosPerMinute = int64(time.Minute)

// State holds the counters of one process: per scope the in-flight requests,
// the requests and tokens of the current UTC minute and the spent and reserved
// money of every budget window; and the open reservations. It is safe for
// concurrent use. One mutex guards everything: every request touches the global
// scope anyway, and one lock keeps admission all-or-nothing without lock ordering.
type State struct {
	mu     sync.Mutex
	scopes map[ScopeRef]*scopeState
	ttls   map[ScopeRef]*scopeState // scopes with a TTL (Limits.TTL), which Expire may forget
	open   map[string]*reservation
	leases leaseHeap
	// epoch grows each time a window is created or reset; a reservation releases
	// only windows not reset since it was made.
	epoch uint64
	free  []*reservation
}

// NewState returns an empty State.
func NewState() *State {
	return &State{
		scopes: make(map[ScopeRef]*scopeState, 64),
		ttls:   make(map[ScopeRef]*scopeState),
		open:   make(map[string]*reservation, 64),
	}
}

// scopeState is the counters of one scope.
type scopeState struct {
	ref      ScopeRef
	inFlight int64
	minute   int64 // UTC minute (unix nanos / 60e9) of requests and tokens
	requests int64
	tokens   int64
	// ttl (nanos) > 0: forgotten when idle since last + ttl (Limits.TTL).
	ttl, last int64
	// windows are the budget windows tracked for the scope; windows[0] is the
	// PeriodTotal window every scope has. They start in inline, next to the
	// counters, so that admission touches little memory. A *window is only
	// held while no window is added to the scope.
	windows []window
	inline  [3]window
}

// window is the spent and reserved money of one period's current window.
type window struct {
	period     Period
	start, end int64 // unix nanos; math.MinInt64/MaxInt64 for PeriodTotal
	since      uint64
	spent      Money
	reserved   Money
}

// reservation is one admitted request until it is settled.
type reservation struct {
	id         string
	model      string
	price      Price
	scopes     []*scopeState
	inline     [6]*scopeState
	worst      Money // the worst-case cost, charged on expiry
	reserved   Money // held on every window (worst in strict mode, 0 in estimate)
	tokens     int64 // counted towards tpm in minute
	minute     int64
	epoch      uint64
	admittedAt time.Time
	deadline   int64 // unix nanos
	heapIndex  int
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// scope returns the state of ref, creating it with its total window.
func (s *State) scope(ref ScopeRef) *scopeState {
	if st, ok := s.scopes[ref]; ok {
		return st
	}
	s.epoch++
	st := &scopeState{ref: ref}
	st.inline[0] = window{period: Period{Kind: PeriodTotal}, start: math.MinInt64, end: math.MaxInt64, since: s.epoch}
	st.windows = st.inline[:1]
	s.scopes[ref] = st
	return st
}

// find returns the scope's window of p, or nil when p is not tracked.
func (st *scopeState) find(p Period) *window {
	for i := range st.windows {
		if w := &st.windows[i]; w.period.Equal(p) {
			return w
		}
	}
	return nil
}

// window returns the scope's window for p, created if missing, current at now.
func (s *State) window(st *scopeState, p Period, now time.Time, nowN int64) *window {
	if w := st.find(p); w != nil {
		s.roll(w, now, nowN)
		return w
	}
	st.windows = append(st.windows, window{period: p})
	w := &st.windows[len(st.windows)-1]
	s.reset(w, now)
	return w
}

// roll moves w to the window containing now, clearing its counters, when now has
// reached its end. A now before its start counts in it: windows never go back.
func (s *State) roll(w *window, now time.Time, nowN int64) {
	if nowN >= w.end {
		s.reset(w, now)
	}
}

func (s *State) reset(w *window, now time.Time) {
	start, end := w.period.Window(now)
	w.start, w.end = windowNanos(start, end)
	s.epoch++
	w.since = s.epoch
	w.spent, w.reserved = 0, 0
}

func windowNanos(start, end time.Time) (int64, int64) {
	s, e := int64(math.MinInt64), int64(math.MaxInt64)
	if !start.IsZero() {
		s = start.UnixNano()
	}
	if !end.Equal(EndOfTime) {
		e = end.UnixNano()
	}
	return s, e
}

// rollMinute moves the rate counters to now's minute (never back).
func (st *scopeState) rollMinute(minute int64) {
	if minute > st.minute {
		st.minute, st.requests, st.tokens = minute, 0, 0
	}
}

// Admit decides on req at now and, when admitted, reserves on every scope at
// once; see the package documentation for the exact rules.
func (s *State) Admit(now time.Time, req *AdmitRequest) Decision {
	nowN := now.UnixNano()
	minute := floorDiv(nowN, nanosPerMinute)
	minuteLeft := time.Duration((minute+1)*nanosPerMinute - nowN)

	mode, shortfall := Strict, Clamp
	if len(req.Scopes) > 0 && req.Scopes[0].Limits != nil {
		mode, shortfall = req.Scopes[0].Limits.Mode, req.Scopes[0].Limits.Shortfall
	}
	inBound := max(req.PromptBytes, 0)
	outBound := req.MaxTokens
	if outBound <= 0 {
		outBound = req.DefaultMaxTokens
	}
	if outBound <= 0 {
		outBound = DefaultOutputBound
	}
	inPrice, outPrice := req.Price.bounds()
	if d, refused := UnpricedRefusal(req); refused {
		return d
	}

	s.mu.Lock()
	defer s.mu.Unlock()

	if _, dup := s.open[req.ID]; dup {
		d := Decision{Reason: ReasonDuplicate}
		if len(req.Scopes) > 0 {
			d.Scope = req.Scopes[0].Ref
		}
		return d
	}

	res := s.newReservation()
	for i := range req.Scopes {
		st := s.scope(req.Scopes[i].Ref)
		st.rollMinute(minute)
		res.scopes = append(res.scopes, st)
	}

	// Budgets first, as they decide the output bound the rate limits count.
	n := outBound
	budgetFail := -1
	var warnings []BudgetWarning
	var inCost u128
	inCost.addMul(inBound, inPrice)
	for i := range req.Scopes {
		lim := req.Scopes[i].Limits
		if lim == nil {
			continue
		}
		for _, b := range lim.Budgets {
			w := s.window(res.scopes[i], b.Period, now, nowN)
			if b.Soft {
				if w.spent >= b.Limit {
					warnings = append(warnings, BudgetWarning{Scope: req.Scopes[i].Ref, Period: b.Period, Limit: b.Limit, Spent: w.spent})
				}
				continue
			}
			if budgetFail >= 0 {
				continue // keep creating windows so that reservations cover them
			}
			if mode == Estimate {
				if w.spent >= b.Limit {
					budgetFail = i
				}
				continue
			}
			fit := affordable(satAdd(satAdd(b.Limit, -w.spent), -w.reserved), inCost, outPrice, n)
			switch {
			case shortfall == Reject && fit < n, fit < 1:
				budgetFail = i
			default:
				n = fit
			}
		}
	}
	if budgetFail >= 0 {
		n = outBound
	}
	worstAcc := inCost
	worstAcc.addMul(n, outPrice)
	worst := worstAcc.ceilPerMillion()
	var tokens int64
	if mode == Estimate {
		tokens = inBound/4 + min(inBound%4, 1)
	} else {
		tokens = satAdd(inBound, n)
	}

	d := Decision{}
	for i := range req.Scopes {
		sc, st := &req.Scopes[i], res.scopes[i]
		lim := sc.Limits
		if lim == nil {
			continue
		}
		switch {
		case !lim.ExpiresAt.IsZero() && !now.Before(lim.ExpiresAt):
			d.Reason = ReasonKeyExpired
		case len(lim.Models) > 0 && !slices.Contains(lim.Models, req.Model):
			d.Reason = ReasonModelNotAllowed
		case lim.MaxParallel > 0 && st.inFlight >= lim.MaxParallel:
			d.Reason, d.RetryAfter = ReasonParallelLimit, parallelRetry
		case lim.RPM > 0 && st.requests >= lim.RPM:
			d.Reason, d.RetryAfter = ReasonRequestLimit, minuteLeft
		case lim.TPM > 0 && satAdd(st.tokens, tokens) > lim.TPM:
			d.Reason, d.RetryAfter = ReasonTokenLimit, minuteLeft
		case i == budgetFail:
			d.Reason = ReasonBudgetExceeded
		default:
			continue
		}
		d.Scope = sc.Ref
		d.RateLimit = rateInfo(req.Scopes, res.scopes, minuteLeft)
		s.recycle(res)
		return d
	}

	reserved := worst
	if mode == Estimate {
		reserved = 0
	}
	for i, st := range res.scopes {
		if lim := req.Scopes[i].Limits; lim != nil && lim.TTL > 0 {
			st.ttl, st.last = int64(lim.TTL), nowN
			s.ttls[st.ref] = st
		}
		st.inFlight++
		st.requests++
		st.tokens = satAdd(st.tokens, tokens)
		for j := range st.windows {
			w := &st.windows[j]
			s.roll(w, now, nowN)
			w.reserved = satAdd(w.reserved, reserved)
		}
	}
	lease := req.Lease
	if lease <= 0 {
		lease = DefaultLease
	}
	res.id, res.model, res.price = req.ID, req.Model, req.Price
	res.worst, res.reserved, res.tokens, res.minute = worst, reserved, tokens, minute
	res.epoch, res.admittedAt, res.deadline = s.epoch, now, satAdd(nowN, int64(lease))
	s.open[req.ID] = res
	s.leases.push(res)

	return Decision{
		Admitted:  true,
		Reason:    ReasonOK,
		MaxTokens: n,
		Clamped:   n < outBound,
		Reserved:  reserved,
		RateLimit: rateInfo(req.Scopes, res.scopes, minuteLeft),
		Warnings:  warnings,
	}
}

// affordable is the largest output bound m ≤ n whose worst cost
// ceil((inCost + m×outPrice)/1e6) fits in avail, or -1 when none does.
func affordable(avail Money, inCost u128, outPrice Money, n int64) int64 {
	if avail < 0 {
		return -1
	}
	room := millionths(avail)
	if room.less(inCost) {
		return -1
	}
	if outPrice <= 0 {
		return n
	}
	left := room.sub(inCost)
	if left.hi >= uint64(outPrice) {
		return n // the quotient exceeds 64 bits
	}
	q, _ := divU128(left, uint64(outPrice))
	if q >= uint64(n) {
		return n
	}
	return int64(q)
}

// rateInfo picks, for requests and for tokens, the scope with a limit that has
// the fewest remaining in the current minute.
func rateInfo(scopes []Scope, states []*scopeState, left time.Duration) RateLimitInfo {
	var ri RateLimitInfo
	haveReq, haveTok := false, false
	for i := range scopes {
		lim := scopes[i].Limits
		if lim == nil {
			continue
		}
		st := states[i]
		if lim.RPM > 0 {
			rem := max(lim.RPM-st.requests, 0)
			if !haveReq || rem < ri.RemainingRequests {
				haveReq = true
				ri.LimitRequests, ri.RemainingRequests, ri.ResetRequests = lim.RPM, rem, left
			}
		}
		if lim.TPM > 0 {
			rem := max(satAdd(lim.TPM, -st.tokens), 0)
			if !haveTok || rem < ri.RemainingTokens {
				haveTok = true
				ri.LimitTokens, ri.RemainingTokens, ri.ResetTokens = lim.TPM, rem, left
			}
		}
	}
	return ri
}

func (s *State) newReservation() *reservation {
	if n := len(s.free); n > 0 {
		r := s.free[n-1]
		s.free = s.free[:n-1]
		return r
	}
	r := &reservation{}
	r.scopes = r.inline[:0]
	return r
}

// recycle clears r and keeps it for a later Admit.
func (s *State) recycle(r *reservation) {
	clear(r.inline[:])
	scopes := r.scopes[:0]
	if cap(scopes) > len(r.inline) {
		scopes = r.inline[:0] // do not keep oversized arrays
	}
	*r = reservation{inline: r.inline}
	r.scopes = scopes
	if len(s.free) < 1024 {
		s.free = append(s.free, r)
	}
}

// Settle charges the exact cost of usage to the reservation id at now, releases
// what it reserved and corrects the tpm count. It returns ok=false, changing
// nothing, when id is not open (unknown or already settled or expired).
func (s *State) Settle(now time.Time, id string, u Usage, st Status) (Settlement, bool) {
	return s.settle(now, id, u, nil, st)
}

// SettleAt is Settle at price p instead of the price id was admitted at:
// a request whose reply names the model that served it (a pass-through
// route's) is charged at that model's price. The reservation it releases
// is the one admitted, whatever p.
func (s *State) SettleAt(now time.Time, id string, u Usage, p Price, st Status) (Settlement, bool) {
	return s.settle(now, id, u, &p, st)
}

func (s *State) settle(now time.Time, id string, u Usage, p *Price, st Status) (Settlement, bool) {
	nowN := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	res, ok := s.open[id]
	if !ok {
		return Settlement{}, false
	}
	price := &res.price
	if p != nil {
		price = p
	}
	cost := Cost(*price, u)
	s.close(res, now, nowN, cost, true, u.Total())
	out := s.settlement(res, now, u, cost, st)
	out.Unpriced = price.Unpriced
	s.recycle(res)
	return out, true
}

// Expire settles every reservation whose lease (admittedAt + lease) has ended
// by now, with StatusExpired and its worst-case cost, freeing its parallel
// slots; it returns them oldest deadline first (nil when none). It then
// forgets every scope with a TTL that has nothing in flight and whose last
// admission or settlement is TTL or more before now.
func (s *State) Expire(now time.Time) []Settlement {
	nowN := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Settlement
	for len(s.leases) > 0 && s.leases[0].deadline <= nowN {
		res := s.leases[0]
		s.close(res, now, nowN, res.worst, false, 0)
		out = append(out, s.settlement(res, now, Usage{}, res.worst, StatusExpired))
		s.recycle(res)
	}
	for ref, st := range s.ttls {
		if st.inFlight == 0 && satAdd(st.last, st.ttl) <= nowN {
			delete(s.scopes, ref)
			delete(s.ttls, ref)
		}
	}
	return out
}

// close removes res from the open set and applies its end to every scope.
func (s *State) close(res *reservation, now time.Time, nowN int64, cost Money, fixTokens bool, actual int64) {
	delete(s.open, res.id)
	s.leases.remove(res.heapIndex)
	nowMinute := floorDiv(nowN, nanosPerMinute)
	for _, st := range res.scopes {
		st.inFlight--
		if st.ttl > 0 {
			st.last = max(st.last, nowN)
		}
		if fixTokens && st.minute == res.minute && nowMinute <= res.minute {
			st.tokens = max(satAdd(st.tokens, actual-res.tokens), 0)
		}
		for j := range st.windows {
			w := &st.windows[j]
			s.roll(w, now, nowN)
			if w.since <= res.epoch {
				w.reserved -= res.reserved
			}
			w.spent = satAdd(w.spent, cost)
		}
	}
}

func (s *State) settlement(res *reservation, now time.Time, u Usage, cost Money, st Status) Settlement {
	refs := make([]ScopeRef, len(res.scopes))
	for i, sc := range res.scopes {
		refs[i] = sc.ref
	}
	return Settlement{
		ID: res.id, Scopes: refs, Model: res.model, Usage: u, Cost: cost,
		Reserved: res.reserved, Status: st, AdmittedAt: res.admittedAt, SettledAt: now, Unpriced: res.price.Unpriced,
	}
}

// Seed sets the spent money of ref's window of p that starts at windowStart
// (the window containing windowStart), as read from the durable ledger at
// start-up. It replaces the spent of that window when it is the tracked one,
// starts tracking it when it is newer, and is ignored when it is older.
func (s *State) Seed(ref ScopeRef, p Period, windowStart time.Time, spent Money) {
	start, end := p.Window(windowStart)
	startN, endN := windowNanos(start, end)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.scope(ref)
	w := st.find(p)
	if w == nil {
		st.windows = append(st.windows, window{period: p, start: startN, end: endN})
		w = &st.windows[len(st.windows)-1]
	}
	switch {
	case w.start == startN && w.since != 0:
	case w.start > startN && w.since != 0:
		return
	default:
		s.epoch++
		w.start, w.end, w.since, w.reserved = startN, endN, s.epoch, 0
	}
	w.spent = spent
}

// Usage is the spent and reserved money of ref's window of p current at now;
// zero when the scope or the period is not tracked.
func (s *State) Usage(ref ScopeRef, p Period, now time.Time) (spent, reserved Money) {
	nowN := now.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.scopes[ref]
	if !ok {
		return 0, 0
	}
	w := st.find(p)
	if w == nil {
		return 0, 0
	}
	s.roll(w, now, nowN)
	return w.spent, w.reserved
}

// Known reports whether ref has counters (it was admitted, seeded or
// created, and not forgotten since).
func (s *State) Known(ref ScopeRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.scopes[ref]
	return ok
}

// InFlight is the number of open reservations charged to ref.
func (s *State) InFlight(ref ScopeRef) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.scopes[ref]; ok {
		return st.inFlight
	}
	return 0
}

// Pending is the number of open reservations.
func (s *State) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}
