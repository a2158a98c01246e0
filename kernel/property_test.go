package kernel

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The property tests drive a State with generated operation sequences —
// admissions, settlements, repeated settlements, expiry and time jumps that
// often land exactly on window boundaries — next to a plain model written from
// the rules of doc.go, and check the accounting invariants after every step.

// worldOptions choose what the generator may do.
type worldOptions struct {
	mode        *BudgetMode // nil: each key draws its own
	beyondBound bool        // usage may exceed the admitted bounds
}

// scopeModel is the model of one scope.
type scopeModel struct {
	ref     ScopeRef
	lim     *Limits
	periods []Period // total first, then each distinct budget period
}

type openModel struct {
	id         string
	key        int
	req        AdmitRequest
	dec        Decision
	admittedAt time.Time
	deadline   time.Time
	minute     int64
	tokens     int64 // counted for tpm
}

type winKey struct {
	ref   ScopeRef
	p     string
	start int64
}

type minuteKey struct {
	ref    ScopeRef
	minute int64
}

type world struct {
	opts    worldOptions
	s       *State
	now     time.Time
	scopes  map[ScopeRef]*scopeModel
	keys    [][]Scope // the request scopes of each key
	prices  []Price
	open    map[string]*openModel
	nextID  int
	settled map[string]int // settlements per id (Settle and Expire)
	ended   map[string]*openModel
	done    []string // settled ids, for repeated settlements
	// ledger is Σ settlement costs per scope.
	ledger map[ScopeRef]Money
	// spent is Σ costs charged to each window, by the window current at settlement.
	spent map[winKey]Money
	// carry is the part of spent from reservations admitted in an earlier window.
	carry map[winKey]Money
	// requests and tokens counted per scope and UTC minute.
	requests map[minuteKey]int64
	tokens   map[minuteKey]int64
	// seen are the scopes of admissions tried (their windows are tracked).
	seen map[ScopeRef]bool
	// log replays every operation applied to s on another State.
	log []func(*State)
	// lastExpire is the time of the last Expire.
	lastExpire time.Time
	// onAdmit runs after each admission (for extra checks).
	onAdmit func(t *rapid.T, req *AdmitRequest, d Decision)
}

var (
	newYork = func() *time.Location {
		l, err := time.LoadLocation("America/New_York")
		if err != nil {
			panic(err)
		}
		return l
	}()
	// worldStart is shortly before New York springs forward (2026-03-08).
	worldStart = time.Date(2026, 3, 7, 23, 58, 0, 0, time.UTC)
)

func drawPeriod(t *rapid.T, label string) Period {
	switch rapid.IntRange(0, 6).Draw(t, label) {
	case 0:
		return Period{Kind: PeriodTotal}
	case 1:
		return Period{Kind: PeriodDaily}
	case 2:
		return Period{Kind: PeriodDaily, Location: newYork}
	case 3:
		return Period{Kind: PeriodWeekly}
	case 4:
		return Period{Kind: PeriodMonthly, Location: newYork}
	default:
		every := time.Duration(rapid.Int64Range(1, 180).Draw(t, label+".minutes")) * time.Minute
		anchor := worldStart.Add(time.Duration(rapid.Int64Range(-3600, 3600).Draw(t, label+".anchor")) * time.Second)
		return Period{Kind: PeriodRolling, Every: every, Anchor: anchor}
	}
}

func drawLimits(t *rapid.T, label string, isKey bool, mode *BudgetMode) *Limits {
	if rapid.IntRange(0, 4).Draw(t, label+".nil") == 0 {
		return nil
	}
	lim := &Limits{}
	for i := range rapid.IntRange(0, 2).Draw(t, label+".budgets") {
		lim.Budgets = append(lim.Budgets, BudgetWindow{
			Limit:  Money(rapid.Int64Range(0, 20_000).Draw(t, label+".limit")),
			Period: drawPeriod(t, label+".period"+strconv.Itoa(i)),
			Soft:   rapid.IntRange(0, 3).Draw(t, label+".soft"+strconv.Itoa(i)) == 0,
		})
	}
	if rapid.Bool().Draw(t, label+".hasRPM") {
		lim.RPM = rapid.Int64Range(1, 6).Draw(t, label+".rpm")
	}
	if rapid.Bool().Draw(t, label+".hasTPM") {
		lim.TPM = rapid.Int64Range(1, 6000).Draw(t, label+".tpm")
	}
	if rapid.Bool().Draw(t, label+".hasParallel") {
		lim.MaxParallel = rapid.Int64Range(1, 4).Draw(t, label+".parallel")
	}
	if rapid.IntRange(0, 3).Draw(t, label+".hasModels") == 0 {
		lim.Models = []string{rapid.SampledFrom([]string{"a", "b"}).Draw(t, label+".model")}
	}
	if isKey {
		if rapid.IntRange(0, 7).Draw(t, label+".expires") == 0 {
			lim.ExpiresAt = worldStart.Add(time.Duration(rapid.Int64Range(0, 48*3600).Draw(t, label+".expiresAt")) * time.Second)
		}
		if mode != nil {
			lim.Mode = *mode
		} else {
			lim.Mode = rapid.SampledFrom([]BudgetMode{Strict, Estimate}).Draw(t, label+".mode")
		}
		lim.Shortfall = rapid.SampledFrom([]Shortfall{Clamp, Reject}).Draw(t, label+".shortfall")
	}
	return lim
}

func newWorld(t *rapid.T, opts worldOptions) *world {
	w := &world{
		opts: opts, s: NewState(), now: worldStart,
		scopes: map[ScopeRef]*scopeModel{}, open: map[string]*openModel{}, ended: map[string]*openModel{}, settled: map[string]int{},
		ledger: map[ScopeRef]Money{}, spent: map[winKey]Money{}, carry: map[winKey]Money{},
		requests: map[minuteKey]int64{}, tokens: map[minuteKey]int64{}, seen: map[ScopeRef]bool{},
	}
	add := func(ref ScopeRef, lim *Limits) Scope {
		if m, ok := w.scopes[ref]; ok {
			return Scope{Ref: ref, Limits: m.lim}
		}
		m := &scopeModel{ref: ref, lim: lim, periods: []Period{{Kind: PeriodTotal}}}
		if lim != nil {
			for _, b := range lim.Budgets {
				if !slices.ContainsFunc(m.periods, b.Period.Equal) {
					m.periods = append(m.periods, b.Period)
				}
			}
		}
		w.scopes[ref] = m
		return Scope{Ref: ref, Limits: lim}
	}
	teams := rapid.IntRange(1, 2).Draw(t, "teams")
	global := add(ScopeRef{Kind: ScopeGlobal}, drawLimits(t, "global", false, nil))
	teamScopes := make([]Scope, teams)
	for i := range teamScopes {
		ref := ScopeRef{Kind: ScopeTeam, ID: "t" + strconv.Itoa(i)}
		teamScopes[i] = add(ref, drawLimits(t, ref.String(), false, nil))
	}
	// A tag with a budget of its own: one more level, shared by the keys'
	// requests that carry it.
	tag := add(ScopeRef{Kind: ScopeTag, ID: TagScopeID("feature", "search")}, drawLimits(t, "tag", false, nil))
	for i := range rapid.IntRange(1, 3).Draw(t, "keys") {
		ref := ScopeRef{Kind: ScopeKey, ID: "k" + strconv.Itoa(i)}
		key := add(ref, drawLimits(t, ref.String(), true, opts.mode))
		team := teamScopes[rapid.IntRange(0, teams-1).Draw(t, ref.String()+".team")]
		w.keys = append(w.keys, []Scope{key, team, global})
		// A run of the key: one more level (its TTL outlives the test, so
		// the run is never forgotten here; TestRunScopeForgotten covers that).
		if rapid.Bool().Draw(t, ref.String()+".run") {
			pol := RunPolicy{Budget: Money(rapid.Int64Range(0, 20_000).Draw(t, ref.String()+".runBudget")), TTL: 10_000 * time.Hour}
			if rapid.Bool().Draw(t, ref.String()+".runRPM") {
				pol.RPM = rapid.Int64Range(1, 6).Draw(t, ref.String()+".runRPMValue")
			}
			run := add(ScopeRef{Kind: ScopeRun, ID: RunScopeID(ref, "run1")}, pol.Limits())
			w.keys = append(w.keys, []Scope{key, run, team, global})
		}
		if rapid.Bool().Draw(t, ref.String()+".tag") {
			w.keys = append(w.keys, []Scope{key, team, tag, global})
		}
	}
	for range rapid.IntRange(1, 2).Draw(t, "prices") {
		pm := rapid.Int64Range(0, 1_500_000)
		w.prices = append(w.prices, Price{
			Input: Money(pm.Draw(t, "price.input")), CachedInput: Money(pm.Draw(t, "price.cached")),
			CacheWrite: Money(pm.Draw(t, "price.write")), Output: Money(pm.Draw(t, "price.output")),
			Reasoning: Money(pm.Draw(t, "price.reasoning")),
		})
	}
	return w
}

func minuteOf(t time.Time) int64 { return floorDiv(t.UnixNano(), nanosPerMinute) }

func (w *world) windowKey(ref ScopeRef, p Period, at time.Time) winKey {
	start, _ := p.Window(at)
	return winKey{ref: ref, p: p.String(), start: start.UnixNano()}
}

// modelReserved is what the open reservations hold on ref's window of p now.
func (w *world) modelReserved(ref ScopeRef, p Period) Money {
	cur := w.windowKey(ref, p, w.now)
	var sum Money
	for _, o := range w.open {
		for _, sc := range o.req.Scopes {
			if sc.Ref == ref && w.windowKey(ref, p, o.admittedAt) == cur {
				sum += o.dec.Reserved
			}
		}
	}
	return sum
}

func (w *world) inFlight(ref ScopeRef) int64 {
	var n int64
	for _, o := range w.open {
		for _, sc := range o.req.Scopes {
			if sc.Ref == ref {
				n++
			}
		}
	}
	return n
}

// expected is the model's decision for req at w.now: the reason, the deciding
// scope, the output bound and the tokens counted for tpm.
func (w *world) expected(req *AdmitRequest) (reason Reason, scope int, n, tokens int64) {
	if _, ok := w.open[req.ID]; ok {
		return ReasonDuplicate, 0, 0, 0
	}
	mode, sf := Strict, Clamp
	if l := req.Scopes[0].Limits; l != nil {
		mode, sf = l.Mode, l.Shortfall
	}
	in := req.PromptBytes
	out := req.MaxTokens
	if out == 0 {
		out = req.DefaultMaxTokens
	}
	if out == 0 {
		out = 4096
	}
	// fits reports whether scope i's windows hold the worst case with m output tokens.
	fits := func(i int, m int64) bool {
		lim := req.Scopes[i].Limits
		if lim == nil {
			return true
		}
		for _, b := range lim.Budgets {
			ref := req.Scopes[i].Ref
			spent := w.spent[w.windowKey(ref, b.Period, w.now)]
			if b.Soft {
				continue // never refuses
			}
			if mode == Estimate {
				if spent >= b.Limit {
					return false
				}
				continue
			}
			if spent+w.modelReserved(ref, b.Period)+WorstCost(req.Price, in, m) > b.Limit {
				return false
			}
		}
		return true
	}
	budgetFail := -1
	for i := range req.Scopes {
		need := int64(1)
		if mode == Estimate || sf == Reject {
			need = out
		}
		if !fits(i, need) {
			budgetFail = i
			break
		}
	}
	n = out
	if budgetFail < 0 && mode == Strict {
		all := func(m int64) bool {
			for i := range req.Scopes {
				if !fits(i, m) {
					return false
				}
			}
			return true
		}
		// The largest m in [1, out] that fits everywhere (binary search).
		lo, hi := int64(1), out
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			if all(mid) {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		n = lo
	}
	if mode == Estimate {
		tokens = (in + 3) / 4
	} else {
		tokens = in + n
	}
	minute := minuteOf(w.now)
	for i, sc := range req.Scopes {
		lim := sc.Limits
		if lim == nil {
			continue
		}
		mk := minuteKey{sc.Ref, minute}
		switch {
		case !lim.ExpiresAt.IsZero() && !w.now.Before(lim.ExpiresAt):
			return ReasonKeyExpired, i, n, tokens
		case len(lim.Models) > 0 && !slices.Contains(lim.Models, req.Model):
			return ReasonModelNotAllowed, i, n, tokens
		case lim.MaxParallel > 0 && w.inFlight(sc.Ref) >= lim.MaxParallel:
			return ReasonParallelLimit, i, n, tokens
		case lim.RPM > 0 && w.requests[mk] >= lim.RPM:
			return ReasonRequestLimit, i, n, tokens
		case lim.TPM > 0 && w.tokens[mk]+tokens > lim.TPM:
			return ReasonTokenLimit, i, n, tokens
		case i == budgetFail:
			return ReasonBudgetExceeded, i, n, tokens
		}
	}
	return ReasonOK, 0, n, tokens
}

// expectedWarnings are the soft windows of req's scopes whose spent has
// reached their limit at w.now.
func (w *world) expectedWarnings(req *AdmitRequest) []BudgetWarning {
	var out []BudgetWarning
	for _, sc := range req.Scopes {
		if sc.Limits == nil {
			continue
		}
		for _, b := range sc.Limits.Budgets {
			spent := w.spent[w.windowKey(sc.Ref, b.Period, w.now)]
			if b.Soft && spent >= b.Limit {
				out = append(out, BudgetWarning{Scope: sc.Ref, Period: b.Period, Limit: b.Limit, Spent: spent})
			}
		}
	}
	return out
}

func (w *world) admit(t *rapid.T) {
	k := rapid.IntRange(0, len(w.keys)-1).Draw(t, "key")
	w.nextID++
	req := AdmitRequest{
		ID:               "r" + strconv.Itoa(w.nextID),
		Scopes:           w.keys[k],
		Model:            rapid.SampledFrom([]string{"a", "b"}).Draw(t, "model"),
		PromptBytes:      rapid.Int64Range(0, 400).Draw(t, "promptBytes"),
		MaxTokens:        rapid.SampledFrom([]int64{0, 1, 7, 64, 300}).Draw(t, "maxTokens"),
		DefaultMaxTokens: rapid.SampledFrom([]int64{0, 16, 16, 200, 200}).Draw(t, "defaultMaxTokens"),
		Price:            rapid.SampledFrom(w.prices).Draw(t, "price"),
		Lease:            time.Duration(rapid.Int64Range(0, 7200).Draw(t, "leaseSeconds")) * time.Second,
	}
	w.admitRequest(t, &req, k)
}

func (w *world) admitRequest(t *rapid.T, req *AdmitRequest, k int) {
	reason, scope, n, tokens := w.expected(req)
	before := snapshot(w.s, w.now)
	d := w.s.Admit(w.now, req)
	now, replay := w.now, *req
	w.log = append(w.log, func(s *State) { s.Admit(now, &replay) })
	if reason != ReasonDuplicate {
		for _, sc := range req.Scopes {
			w.seen[sc.Ref] = true
		}
	}
	require.Equal(t, reason, d.Reason, "decision %+v", d)
	require.Equal(t, reason == ReasonOK, d.Admitted)
	if w.onAdmit != nil {
		w.onAdmit(t, req, d)
	}
	if !d.Admitted {
		require.Equal(t, req.Scopes[scope].Ref, d.Scope)
		require.Equal(t, before, snapshot(w.s, w.now), "a refusal changes nothing")
		return
	}
	require.Equal(t, n, d.MaxTokens)
	require.Equal(t, w.expectedWarnings(req), d.Warnings)
	worst := WorstCost(req.Price, req.PromptBytes, n)
	if l := req.Scopes[0].Limits; l != nil && l.Mode == Estimate {
		require.Zero(t, d.Reserved)
	} else {
		require.Equal(t, worst, d.Reserved)
	}
	lease := req.Lease
	if lease == 0 {
		lease = DefaultLease
	}
	minute := minuteOf(w.now)
	w.open[req.ID] = &openModel{
		id: req.ID, key: k, req: *req, dec: d, admittedAt: w.now, deadline: w.now.Add(lease),
		minute: minute, tokens: tokens,
	}
	for _, sc := range req.Scopes {
		w.requests[minuteKey{sc.Ref, minute}]++
		w.tokens[minuteKey{sc.Ref, minute}] += tokens
	}
}

// drawUsage is a usage within the admitted bounds (or beyond, when allowed).
func (w *world) drawUsage(t *rapid.T, o *openModel) Usage {
	inMax, outMax := o.req.PromptBytes, o.dec.MaxTokens
	if w.opts.beyondBound && rapid.Bool().Draw(t, "beyond") {
		inMax, outMax = inMax*2+10, outMax*2+10
	}
	a := rapid.Int64Range(0, inMax).Draw(t, "input")
	b := rapid.Int64Range(0, inMax-a).Draw(t, "cached")
	c := rapid.Int64Range(0, inMax-a-b).Draw(t, "cacheWrite")
	o1 := rapid.Int64Range(0, outMax).Draw(t, "output")
	r := rapid.Int64Range(0, outMax-o1).Draw(t, "reasoning")
	return Usage{Input: a, CachedInput: b, CacheWrite: c, Output: o1, Reasoning: r}
}

func (w *world) openIDs() []string {
	ids := make([]string, 0, len(w.open))
	for id := range w.open {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (w *world) settle(t *rapid.T) {
	ids := w.openIDs()
	if len(ids) == 0 {
		t.Skip("nothing open")
	}
	o := w.open[rapid.SampledFrom(ids).Draw(t, "id")]
	u := w.drawUsage(t, o)
	status := rapid.SampledFrom([]Status{StatusCompleted, StatusAborted, StatusFailed}).Draw(t, "status")
	st, ok := w.s.Settle(w.now, o.id, u, status)
	require.True(t, ok)
	now, id := w.now, o.id
	w.log = append(w.log, func(s *State) { s.Settle(now, id, u, status) })
	cost := Cost(o.req.Price, u)
	require.Equal(t, cost, st.Cost)
	require.Equal(t, status, st.Status)
	require.Equal(t, u, st.Usage)
	require.Equal(t, o.dec.Reserved, st.Reserved)
	w.record(st, o)
	if minuteOf(w.now) == o.minute {
		for _, sc := range o.req.Scopes {
			w.tokens[minuteKey{sc.Ref, o.minute}] += u.Total() - o.tokens
		}
	}
}

// record applies a settlement to the model and checks its common fields.
func (w *world) record(st Settlement, o *openModel) {
	refs := make([]ScopeRef, len(o.req.Scopes))
	for i, sc := range o.req.Scopes {
		refs[i] = sc.Ref
	}
	if !slices.Equal(refs, st.Scopes) || st.ID != o.id || st.Model != o.req.Model ||
		!st.AdmittedAt.Equal(o.admittedAt) || !st.SettledAt.Equal(w.now) {
		panic("settlement fields differ from the reservation: " + st.ID)
	}
	delete(w.open, o.id)
	w.ended[o.id] = o
	w.settled[o.id]++
	w.done = append(w.done, o.id)
	for _, ref := range refs {
		w.ledger[ref] += st.Cost
		for _, p := range w.scopes[ref].periods {
			cur := w.windowKey(ref, p, w.now)
			w.spent[cur] += st.Cost
			if w.windowKey(ref, p, o.admittedAt) != cur {
				w.carry[cur] += st.Cost
			}
		}
	}
}

func (w *world) settleAgain(t *rapid.T) {
	id := "unknown"
	if len(w.done) > 0 && rapid.IntRange(0, 4).Draw(t, "known") > 0 {
		id = rapid.SampledFrom(w.done).Draw(t, "id")
	}
	before := snapshot(w.s, w.now)
	_, ok := w.s.Settle(w.now, id, Usage{Input: 10, Output: 10}, StatusCompleted)
	require.False(t, ok, "settled %s twice", id)
	now := w.now
	w.log = append(w.log, func(s *State) { s.Settle(now, id, Usage{Input: 10, Output: 10}, StatusCompleted) })
	require.Equal(t, before, snapshot(w.s, w.now))
}

func (w *world) duplicate(t *rapid.T) {
	ids := w.openIDs()
	if len(ids) == 0 {
		t.Skip("nothing open")
	}
	o := w.open[rapid.SampledFrom(ids).Draw(t, "id")]
	req := o.req
	w.admitRequest(t, &req, o.key)
}

// boundaries are the next window ends of every period in use.
func (w *world) boundaries() []time.Time {
	var out []time.Time
	for _, m := range w.scopes {
		for _, p := range m.periods {
			if _, end := p.Window(w.now); !end.Equal(EndOfTime) {
				out = append(out, end)
			}
		}
	}
	_, minuteEnd := Period{Kind: PeriodRolling, Every: time.Minute}.Window(w.now)
	out = append(out, minuteEnd)
	for _, o := range w.open {
		out = append(out, o.deadline)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

func (w *world) tick(t *rapid.T) {
	switch rapid.IntRange(0, 4).Draw(t, "tickKind") {
	case 0:
		w.now = w.now.Add(time.Duration(rapid.Int64Range(1, int64(time.Second)).Draw(t, "nanos")))
	case 1:
		w.now = w.now.Add(time.Duration(rapid.Int64Range(1, 180).Draw(t, "seconds")) * time.Second)
	case 2:
		w.now = w.now.Add(time.Duration(rapid.Int64Range(1, 600).Draw(t, "minutes")) * time.Minute)
	default:
		// Exactly at, or one nanosecond before, a window end or lease deadline.
		b := rapid.SampledFrom(w.boundaries()).Draw(t, "boundary")
		if rapid.Bool().Draw(t, "justBefore") {
			b = b.Add(-time.Nanosecond)
		}
		if !b.After(w.now) {
			t.Skip("boundary passed")
		}
		w.now = b
	}
}

func (w *world) expire(t *rapid.T) {
	got := w.s.Expire(w.now)
	now := w.now
	w.log = append(w.log, func(s *State) { s.Expire(now) })
	w.lastExpire = w.now
	var want []string
	for id, o := range w.open {
		if !o.deadline.After(w.now) {
			want = append(want, id)
		}
	}
	ids := make([]string, len(got))
	for i, st := range got {
		ids[i] = st.ID
		o := w.open[st.ID]
		require.NotNil(t, o, "expired %s which is not open", st.ID)
		require.Equal(t, StatusExpired, st.Status)
		require.Equal(t, Usage{}, st.Usage)
		require.Equal(t, WorstCost(o.req.Price, o.req.PromptBytes, o.dec.MaxTokens), st.Cost)
		if i > 0 {
			require.False(t, o.deadline.Before(w.byID(got[i-1].ID).deadline), "oldest deadline first")
		}
		w.record(st, o)
	}
	require.ElementsMatch(t, want, ids)
}

// byID finds a reservation of the model, open or ended.
func (w *world) byID(id string) *openModel {
	if o, ok := w.open[id]; ok {
		return o
	}
	return w.ended[id]
}

func (w *world) actions(extra map[string]func(*rapid.T)) map[string]func(*rapid.T) {
	a := map[string]func(*rapid.T){
		"admit":       w.admit,
		"admit2":      w.admit,
		"admit3":      w.admit,
		"settle":      w.settle,
		"settle2":     w.settle,
		"settleAgain": w.settleAgain,
		"duplicate":   w.duplicate,
		"tick":        w.tick,
		"tick2":       w.tick,
		"expire":      w.expire,
	}
	for k, f := range extra {
		a[k] = f
	}
	return a
}

// checkEverything is the full model comparison, run after every step.
func (w *world) checkEverything(t *rapid.T) {
	require.Equal(t, len(w.open), w.s.Pending())
	for ref, m := range w.scopes {
		require.Equal(t, w.inFlight(ref), w.s.InFlight(ref), "in flight of %s", ref)
		for _, p := range m.periods {
			spent, reserved := w.s.Usage(ref, p, w.now)
			if !w.seen[ref] {
				require.Zero(t, spent, "untracked %s", ref)
				require.Zero(t, reserved, "untracked %s", ref)
				continue
			}
			require.Equal(t, w.spent[w.windowKey(ref, p, w.now)], spent, "spent of %s %s", ref, p)
			require.Equal(t, w.modelReserved(ref, p), reserved, "reserved of %s %s", ref, p)
		}
	}
}

func strictMode() *BudgetMode { m := Strict; return &m }

func TestPropertyNoOverspendStrict(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, worldOptions{mode: strictMode()})
		t.Repeat(w.actions(map[string]func(*rapid.T){"": func(t *rapid.T) {
			// spent + reserved ≤ limit in every budget window, except for what
			// requests admitted in an earlier window were charged in this one.
			for ref, m := range w.scopes {
				if m.lim == nil {
					continue
				}
				for _, b := range m.lim.Budgets {
					if b.Soft {
						continue // may pass its limit: it only warns
					}
					spent, reserved := w.s.Usage(ref, b.Period, w.now)
					carry := w.carry[w.windowKey(ref, b.Period, w.now)]
					require.LessOrEqual(t, spent+reserved, b.Limit+carry, "%s %s", ref, b.Period)
				}
			}
			w.checkEverything(t)
		}}))
	})
}

func TestPropertySettleExactlyOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, worldOptions{beyondBound: true})
		t.Repeat(w.actions(map[string]func(*rapid.T){"": func(t *rapid.T) {
			for id, n := range w.settled {
				require.Equal(t, 1, n, "settlements of %s", id)
			}
			w.checkEverything(t)
		}}))
		// Every reservation ends exactly once, and then nothing is held.
		w.now = w.now.Add(DefaultLease + 2*time.Hour)
		w.expire(t)
		require.Zero(t, w.s.Pending())
		for id, n := range w.settled {
			require.Equal(t, 1, n, "settlements of %s", id)
		}
		require.Len(t, w.settled, len(w.done))
		for ref, m := range w.scopes {
			require.Zero(t, w.s.InFlight(ref))
			for _, p := range m.periods {
				_, reserved := w.s.Usage(ref, p, w.now)
				require.Zero(t, reserved)
			}
		}
	})
}

func TestPropertyBatchedEqualsSequential(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, worldOptions{beyondBound: true})
		t.Repeat(w.actions(map[string]func(*rapid.T){"": w.checkEverything}))

		// Replay the history on two new States, then settle a batch of the open
		// reservations, one State in the order drawn, the other in a permutation.
		ids := w.openIDs()
		if len(ids) == 0 {
			t.Skip("nothing open")
		}
		batch := rapid.SliceOfNDistinct(rapid.SampledFrom(ids), 1, len(ids), rapid.ID[string]).Draw(t, "batch")
		usages := make(map[string]Usage, len(batch))
		for _, id := range batch {
			usages[id] = w.drawUsage(t, w.open[id])
		}
		w.now = w.now.Add(time.Duration(rapid.Int64Range(0, int64(time.Hour)).Draw(t, "later")))
		order := rapid.Permutation(batch).Draw(t, "order")

		seq, perm := NewState(), NewState()
		for _, op := range w.log {
			op(seq)
			op(perm)
		}
		require.Equal(t, snapshot(w.s, w.now), snapshot(seq, w.now), "replay")
		settleAll := func(s *State, ids []string) map[string]Settlement {
			out := map[string]Settlement{}
			for _, id := range ids {
				st, ok := s.Settle(w.now, id, usages[id], StatusCompleted)
				require.True(t, ok)
				out[id] = st
			}
			return out
		}
		a, b := settleAll(seq, batch), settleAll(perm, order)
		require.Equal(t, a, b)
		require.Equal(t, snapshot(seq, w.now), snapshot(perm, w.now))
		require.Equal(t, seq.Pending(), perm.Pending())
	})
}

func TestPropertyLedgerSumEqualsSpent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, worldOptions{beyondBound: true})
		t.Repeat(w.actions(map[string]func(*rapid.T){"": func(t *rapid.T) {
			// Σ of the costs of every settlement charged to a scope is the
			// spent of its total window.
			for ref := range w.scopes {
				spent, _ := w.s.Usage(ref, Period{Kind: PeriodTotal}, w.now)
				require.Equal(t, w.ledger[ref], spent, "%s", ref)
			}
			w.checkEverything(t)
		}}))
	})
}

func TestPropertyWindowsResetExactly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, worldOptions{beyondBound: true})
		t.Repeat(w.actions(map[string]func(*rapid.T){"": func(t *rapid.T) {
			// Each window holds exactly what was charged while it was current
			// (ticks land on window ends and one nanosecond before them), and
			// only reservations made in it.
			w.checkEverything(t)
			for ref, m := range w.scopes {
				if !w.seen[ref] {
					continue
				}
				for _, p := range m.periods {
					start, _ := p.Window(w.now)
					if !start.Equal(w.now) {
						continue
					}
					// At the very start of a window nothing was settled in it yet.
					spent, _ := w.s.Usage(ref, p, w.now)
					require.Equal(t, w.spent[w.windowKey(ref, p, w.now)], spent)
				}
			}
		}}))
	})
}

func TestPropertyRateLimitsNeverExceeded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, worldOptions{mode: strictMode()})
		w.onAdmit = func(t *rapid.T, req *AdmitRequest, d Decision) {
			if d.Reason == ReasonDuplicate {
				return
			}
			// The headers describe the scope with the fewest remaining.
			minute := minuteOf(w.now)
			var want RateLimitInfo
			first := [2]bool{true, true}
			left := time.Duration((minute+1)*nanosPerMinute - w.now.UnixNano())
			for _, sc := range req.Scopes {
				lim := sc.Limits
				if lim == nil {
					continue
				}
				mk := minuteKey{sc.Ref, minute}
				reqs, toks := w.requests[mk], w.tokens[mk]
				if d.Admitted {
					reqs++
					toks += d.MaxTokens + req.PromptBytes
				}
				if rem := max(lim.RPM-reqs, 0); lim.RPM > 0 && (first[0] || rem < want.RemainingRequests) {
					first[0] = false
					want.LimitRequests, want.RemainingRequests, want.ResetRequests = lim.RPM, rem, left
				}
				if rem := max(lim.TPM-toks, 0); lim.TPM > 0 && (first[1] || rem < want.RemainingTokens) {
					first[1] = false
					want.LimitTokens, want.RemainingTokens, want.ResetTokens = lim.TPM, rem, left
				}
			}
			require.Equal(t, want, d.RateLimit)
			switch d.Reason {
			case ReasonRequestLimit, ReasonTokenLimit:
				require.Equal(t, left, d.RetryAfter)
			case ReasonParallelLimit:
				require.Equal(t, time.Second, d.RetryAfter)
			default:
				require.Zero(t, d.RetryAfter)
			}
		}
		t.Repeat(w.actions(map[string]func(*rapid.T){"": func(t *rapid.T) {
			minute := minuteOf(w.now)
			for ref, m := range w.scopes {
				if m.lim == nil {
					continue
				}
				mk := minuteKey{ref, minute}
				if m.lim.RPM > 0 {
					require.LessOrEqual(t, w.requests[mk], m.lim.RPM, "rpm of %s", ref)
				}
				if m.lim.TPM > 0 {
					require.LessOrEqual(t, w.tokens[mk], m.lim.TPM, "tpm of %s", ref)
				}
				if m.lim.MaxParallel > 0 {
					require.LessOrEqual(t, w.s.InFlight(ref), m.lim.MaxParallel, "parallel of %s", ref)
				}
			}
			w.checkEverything(t)
		}}))
	})
}

func TestPropertyNoReservationOutlivesLease(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld(t, worldOptions{beyondBound: true})
		t.Repeat(w.actions(map[string]func(*rapid.T){"": func(t *rapid.T) {
			// After Expire(at), nothing whose lease ended by at is open, in
			// the model or in the State; and nothing ended before its lease.
			snap := snapshot(w.s, w.now)
			require.Len(t, snap.Open, len(w.open))
			for id, o := range w.open {
				require.True(t, o.deadline.After(w.lastExpire), "%s outlived its lease", id)
				require.Contains(t, snap.Open, id)
				require.Equal(t, o.deadline.UnixNano(), snap.Open[id].Deadline)
			}
			w.checkEverything(t)
		}}))
	})
}
