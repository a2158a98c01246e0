package storetest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// base is the start of the hours the generated entries end in.
var base = time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)

// hours is how many hours the generated entries span.
const hours = 6

// Gen returns n ledger entries with ids prefix-0…, spread over the hours after
// base, charged to a few keys, users, teams, orgs and customers, with times at
// microsecond precision and exact costs. The same seed gives the same entries.
func Gen(n int, seed uint64, prefix string) []store.LedgerEntry {
	r := rand.New(rand.NewPCG(seed, 7))
	pick := func(p string, k int, emptyOdds int) string {
		if emptyOdds > 0 && r.IntN(emptyOdds) == 0 {
			return ""
		}
		return fmt.Sprint(p, r.IntN(k))
	}
	out := make([]store.LedgerEntry, n)
	for i := range out {
		ended := base.Add(time.Duration(r.Int64N(int64(hours*time.Hour/time.Microsecond))) * time.Microsecond)
		u := kernel.Usage{
			Input: r.Int64N(5000), CachedInput: r.Int64N(100), CacheWrite: r.Int64N(50),
			Output: r.Int64N(2000), Reasoning: r.Int64N(300),
		}
		out[i] = store.LedgerEntry{
			RequestID:  fmt.Sprintf("%s-%06d", prefix, i),
			KeyID:      pick("key", 5, 0),
			UserID:     pick("user", 3, 3),
			TeamID:     pick("team", 2, 2),
			OrgID:      pick("org", 2, 4),
			CustomerID: pick("cust", 3, 2),
			Model:      pick("model", 3, 0),
			Deployment: pick("dep", 4, 0),
			Usage:      u,
			Cost:       kernel.Money(r.Int64N(3 * int64(kernel.Cent))),
			Status:     kernel.Status(r.IntN(4)),
			HTTPStatus: 200 + 100*r.IntN(4),
			Stream:     r.IntN(2) == 0,
			StartedAt:  ended.Add(-time.Duration(r.Int64N(int64(time.Minute/time.Microsecond))) * time.Microsecond),
			EndedAt:    ended,
			Unpriced:   i%7 == 3, // not drawn: the same seed gives the entries it always gave
		}
		if run := pick("run", 3, 2); run != "" { // the run scope of its key, or none (NULL)
			out[i].RunID = kernel.RunScopeID(kernel.ScopeRef{Kind: kernel.ScopeKey, ID: out[i].KeyID}, run)
		}
		// Tags, not drawn (the same seed gives the entries it always gave):
		// none (NULL), one, or two; "search" is a prefix of "search-v2".
		switch i % 4 {
		case 1:
			out[i].Tags = []string{"feature=" + [...]string{"search", "search-v2", "chat"}[i%3]}
		case 2, 3:
			out[i].Tags = []string{"env=" + [...]string{"prod", "dev"}[i%2], "feature=" + [...]string{"search", "search-v2", "chat"}[i%3]}
		}
	}
	return out
}

// allScopes lists every scope the entries are charged to, in a fixed order.
func allScopes(entries []store.LedgerEntry) []kernel.ScopeRef {
	seen := map[kernel.ScopeRef]bool{}
	var out []kernel.ScopeRef
	for i := range entries {
		for _, ref := range entries[i].Scopes() {
			if !seen[ref] {
				seen[ref] = true
				out = append(out, ref)
			}
		}
	}
	slices.SortFunc(out, func(a, b kernel.ScopeRef) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// charged sums, one entry at a time, what entries ending in [since, until)
// charged to a scope.
func charged(entries []store.LedgerEntry, scope kernel.ScopeRef, since, until time.Time) (cost kernel.Money, requests, tokens int64) {
	for i := range entries {
		e := &entries[i]
		if e.EndedAt.Before(since) || (!until.IsZero() && !e.EndedAt.Before(until)) {
			continue
		}
		if slices.Contains(e.Scopes(), scope) {
			cost += e.Cost
			requests++
			tokens += e.Usage.Total()
		}
	}
	return cost, requests, tokens
}

// norm puts an entry's times in the form the suite compares: UTC, no monotonic clock.
func norm(entries []store.LedgerEntry) []store.LedgerEntry {
	out := slices.Clone(entries)
	for i := range out {
		out[i].StartedAt = out[i].StartedAt.UTC().Round(0)
		out[i].EndedAt = out[i].EndedAt.UTC().Round(0)
	}
	return out
}

func sorted(entries []store.LedgerEntry) []store.LedgerEntry {
	out := slices.Clone(entries)
	slices.SortFunc(out, func(a, b store.LedgerEntry) int {
		return cmp.Or(a.EndedAt.Compare(b.EndedAt), cmp.Compare(a.RequestID, b.RequestID))
	})
	return out
}

// all reads every ledger row by pages of size page.
func all(t *testing.T, st store.Store, f store.LedgerFilter, page int) []store.LedgerEntry {
	t.Helper()
	var out []store.LedgerEntry
	f.Limit = page
	for range 100_000 {
		got, err := st.Entries(t.Context(), f)
		require.NoError(t, err)
		require.LessOrEqual(t, len(got), page)
		out = append(out, got...)
		if len(got) < page {
			return out
		}
		f.After = got[len(got)-1].RequestID
	}
	t.Fatal("pagination does not end")
	return nil
}

func (s *suite) ledgerTests() []test {
	return []test{
		{"EntriesOfUnnamedScopeAreNone", func(t *testing.T) {
			// Entries are charged only to named scopes: a filter on a kind
			// with no id matches nothing, not the rows that have no such scope.
			st := s.fresh(t)
			entries := Gen(60, 3, "un")
			require.True(t, slices.ContainsFunc(entries, func(e store.LedgerEntry) bool { return e.OrgID == "" }))
			require.NoError(t, st.Append(t.Context(), entries...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			for _, kind := range []kernel.ScopeKind{kernel.ScopeOrg, kernel.ScopeTeam, kernel.ScopeCustomer} {
				got, err := st.Entries(t.Context(), store.LedgerFilter{Scope: &kernel.ScopeRef{Kind: kind}})
				require.NoError(t, err)
				require.Empty(t, got, "kind %v", kind)
			}
		}},
		{"UnpricedRoundTrip", func(t *testing.T) {
			// A row served without a price keeps its mark; a priced $0 row has none.
			st := s.fresh(t)
			at := base.Add(time.Minute)
			rows := []store.LedgerEntry{
				{RequestID: "unpriced", KeyID: "k", Model: "m", Usage: kernel.Usage{Input: 10, Output: 5}, StartedAt: at, EndedAt: at, Unpriced: true},
				{RequestID: "free", KeyID: "k", Model: "m", Usage: kernel.Usage{Input: 10, Output: 5}, StartedAt: at, EndedAt: at.Add(time.Second)},
			}
			require.NoError(t, st.Append(t.Context(), rows...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			got, err := st.Entries(t.Context(), store.LedgerFilter{Model: "m"})
			require.NoError(t, err)
			require.Len(t, got, 2)
			require.Equal(t, "unpriced", got[0].RequestID)
			require.True(t, got[0].Unpriced)
			require.False(t, got[1].Unpriced)
		}},
		{"RequestedModelRoundTrip", func(t *testing.T) {
			// The client's name beside its group (issue 38); none when it
			// asked for the group itself.
			st := s.fresh(t)
			at := base.Add(time.Minute)
			rows := []store.LedgerEntry{
				{RequestID: "via-pattern", KeyID: "k", Model: "demo", RequestedModel: "claude-opus-4-8", StartedAt: at, EndedAt: at},
				{RequestID: "by-group", KeyID: "k", Model: "demo", StartedAt: at, EndedAt: at.Add(time.Second)},
			}
			require.NoError(t, st.Append(t.Context(), rows...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			got, err := st.Entries(t.Context(), store.LedgerFilter{Model: "demo"})
			require.NoError(t, err)
			require.Len(t, got, 2)
			require.Equal(t, "claude-opus-4-8", got[0].RequestedModel)
			require.Empty(t, got[1].RequestedModel)
		}},
		{"UnitRoundTrip", func(t *testing.T) {
			// A row charged per unit keeps its unit and quantity (issue
			// 34); a token row has neither.
			st := s.fresh(t)
			at := base.Add(time.Minute)
			rows := []store.LedgerEntry{
				{RequestID: "img", KeyID: "k", Model: "dall-e", Unit: kernel.UnitImages, Quantity: 3, Usage: kernel.Usage{Input: 3}, Cost: 120_000_000, StartedAt: at, EndedAt: at},
				{RequestID: "chat", KeyID: "k", Model: "dall-e", Usage: kernel.Usage{Input: 10, Output: 2}, StartedAt: at, EndedAt: at.Add(time.Second)},
				{RequestID: "tts", KeyID: "k", Model: "dall-e", Unit: kernel.UnitCharacters, Quantity: 4096, Usage: kernel.Usage{Input: 4096}, StartedAt: at, EndedAt: at.Add(2 * time.Second)},
			}
			require.NoError(t, st.Append(t.Context(), rows...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			got, err := st.Entries(t.Context(), store.LedgerFilter{Model: "dall-e"})
			require.NoError(t, err)
			require.Len(t, got, 3)
			require.Equal(t, kernel.UnitImages, got[0].Unit)
			require.Equal(t, int64(3), got[0].Quantity)
			require.Equal(t, kernel.Money(120_000_000), got[0].Cost)
			require.Empty(t, got[1].Unit)
			require.Zero(t, got[1].Quantity)
			require.Equal(t, kernel.UnitCharacters, got[2].Unit)
			require.Equal(t, int64(4096), got[2].Quantity)
		}},
		{"AppendFlushRoundTrip", func(t *testing.T) {
			st := s.fresh(t)
			entries := Gen(50, 1, "rt")
			entries[0].StartedAt = time.Date(2026, 5, 4, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
			entries[0].EndedAt = time.Date(2026, 5, 4, 12, 0, 1, 987654321, time.FixedZone("x", 3600))
			require.NoError(t, st.Append(t.Context(), entries[:20]...))
			for _, e := range entries[20:] {
				require.NoError(t, st.Append(t.Context(), e))
			}
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			got := all(t, st, store.LedgerFilter{}, 1000)
			require.Equal(t, norm(sorted(entries)), norm(got))
			for _, e := range got {
				require.Equal(t, time.UTC, e.EndedAt.Location())
			}
		}},
		{"FlushWithNothingAppended", func(t *testing.T) {
			st := s.fresh(t)
			require.NoError(t, st.Flush(timeout(t, 10*time.Second)))
			require.NoError(t, st.Append(t.Context()))
			require.NoError(t, st.Flush(timeout(t, 10*time.Second)))
		}},
		{"IdempotentByRequestID", func(t *testing.T) {
			st := s.fresh(t)
			entries := Gen(30, 2, "dup")
			again := slices.Clone(entries[:10])
			for i := range again {
				again[i].Cost += 1000 // a retry with other values is still ignored
			}
			require.NoError(t, st.Append(t.Context(), entries[:20]...))
			require.NoError(t, st.Append(t.Context(), entries[5], entries[5]))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			require.NoError(t, st.Append(t.Context(), again...))
			require.NoError(t, st.Append(t.Context(), append(slices.Clone(entries[15:]), entries[20:]...)...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			got := all(t, st, store.LedgerFilter{}, 1000)
			require.Equal(t, norm(sorted(entries)), norm(got))
			for _, scope := range allScopes(entries) {
				want, _, _ := charged(entries, scope, time.Time{}, time.Time{})
				spent, err := st.ScopeSpend(t.Context(), scope, time.Time{}, time.Time{})
				require.NoError(t, err)
				require.Equal(t, want, spent, "scope %+v counted once per request", scope)
			}
		}},
		{"ConcurrentAppendsExactTotals", func(t *testing.T) {
			st := s.fresh(t)
			const appenders = 8
			entries := Gen(2000, 3, "cc")
			var wg sync.WaitGroup
			for g := range appenders {
				wg.Go(func() {
					for i := g; i < len(entries); i += appenders {
						if err := st.Append(t.Context(), entries[i]); err != nil {
							t.Errorf("append: %v", err)
							return
						}
						if i%97 == 0 {
							// Retries from another appender race with the first write.
							if err := st.Append(t.Context(), entries[(i+1)%len(entries)]); err != nil {
								t.Errorf("append: %v", err)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			require.NoError(t, st.Flush(timeout(t, 60*time.Second)))
			for _, scope := range allScopes(entries) {
				want, _, _ := charged(entries, scope, time.Time{}, time.Time{})
				spent, err := st.ScopeSpend(t.Context(), scope, time.Time{}, time.Time{})
				require.NoError(t, err)
				require.Equal(t, want, spent, "scope %+v", scope)
			}
			got := all(t, st, store.LedgerFilter{}, 500)
			require.Len(t, got, len(entries))
		}},
		{"FlushCoversEarlierAppendsOfOthers", func(t *testing.T) {
			st := s.fresh(t)
			entries := Gen(400, 4, "fl")
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := g; i < len(entries); i += 4 {
						if err := st.Append(t.Context(), entries[i]); err != nil {
							t.Errorf("append: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			// Every Append above returned before this Flush began.
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			spent, err := st.ScopeSpend(t.Context(), kernel.ScopeRef{Kind: kernel.ScopeGlobal}, time.Time{}, time.Time{})
			require.NoError(t, err)
			want, _, _ := charged(entries, kernel.ScopeRef{Kind: kernel.ScopeGlobal}, time.Time{}, time.Time{})
			require.Equal(t, want, spent)
		}},
	}
}

func (s *suite) spendTests() []test {
	load := func(t *testing.T, n int, seed uint64) (store.Store, []store.LedgerEntry) {
		st := s.fresh(t)
		entries := Gen(n, seed, "sp")
		require.NoError(t, st.Append(t.Context(), entries...))
		require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
		return st, entries
	}
	hour := func(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) }
	return []test{
		{"ScopeSpendWindows", func(t *testing.T) {
			st, entries := load(t, 600, 5)
			windows := []struct {
				name         string
				since, until time.Time
			}{
				{"all time", time.Time{}, time.Time{}},
				{"open end", hour(2), time.Time{}},
				{"open start", time.Time{}, hour(3)},
				{"one hour", hour(1), hour(2)},
				{"three hours", hour(2), hour(5)},
				{"before everything", hour(-5), hour(0)},
				{"after everything", hour(hours), hour(hours + 3)},
				{"empty", hour(3), hour(3)},
			}
			for _, scope := range allScopes(entries) {
				for _, w := range windows {
					want, _, _ := charged(entries, scope, w.since, w.until)
					got, err := st.ScopeSpend(t.Context(), scope, w.since, w.until)
					require.NoError(t, err)
					require.Equal(t, want, got, "scope %+v window %s", scope, w.name)
				}
			}
			unknown, err := st.ScopeSpend(t.Context(), kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "nobody"}, time.Time{}, time.Time{})
			require.NoError(t, err)
			require.Zero(t, unknown)
		}},
		{"ScopeSpendPartialHoursCountWhole", func(t *testing.T) {
			st, entries := load(t, 300, 6)
			global := kernel.ScopeRef{Kind: kernel.ScopeGlobal}
			want, _, _ := charged(entries, global, hour(1), hour(3))
			got, err := st.ScopeSpend(t.Context(), global, hour(1).Add(20*time.Minute), hour(2).Add(time.Minute))
			require.NoError(t, err)
			require.Equal(t, want, got)
		}},
		{"ScopeSpendSeesEntriesOnceFlushed", func(t *testing.T) {
			st := s.fresh(t)
			scope := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}
			var want kernel.Money
			for i := range 5 {
				e := store.LedgerEntry{RequestID: fmt.Sprint("r", i), KeyID: "k", Model: "m", Cost: kernel.Money(i + 1), EndedAt: base}
				want += e.Cost
				require.NoError(t, st.Append(t.Context(), e))
				require.NoError(t, st.Flush(timeout(t, 10*time.Second)))
				got, err := st.ScopeSpend(t.Context(), scope, base, base.Add(time.Hour))
				require.NoError(t, err)
				require.Equal(t, want, got)
			}
		}},
		{"Series", func(t *testing.T) {
			st, entries := load(t, 500, 7)
			for _, scope := range allScopes(entries)[:4] {
				for _, step := range []time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour} {
					since, until := hour(-1), hour(hours+1)
					got, err := st.Series(t.Context(), scope, since, until, step)
					require.NoError(t, err)
					n := int((until.Sub(since) + step - 1) / step)
					require.Len(t, got, n, "every bucket, empty ones too")
					for i, p := range got {
						start := since.Add(time.Duration(i) * step)
						end := start.Add(step)
						if end.After(until) {
							end = until
						}
						c, r, tok := charged(entries, scope, start, end)
						require.True(t, start.Equal(p.Start), "bucket %d starts %s, want %s", i, p.Start, start)
						require.Equal(t, time.UTC, p.Start.Location())
						require.Equal(t, store.SpendPoint{Start: p.Start, Cost: c, Requests: r, Tokens: tok}, p,
							"scope %+v step %s bucket %d", scope, step, i)
					}
				}
			}
		}},
		{"SeriesEdges", func(t *testing.T) {
			st, _ := load(t, 50, 8)
			global := kernel.ScopeRef{Kind: kernel.ScopeGlobal}
			got, err := st.Series(t.Context(), global, hour(2), hour(2), time.Hour)
			require.NoError(t, err)
			require.Empty(t, got)
			_, err = st.Series(t.Context(), global, hour(0), hour(2), 30*time.Minute)
			require.Error(t, err, "step shorter than an hour")
			_, err = st.Series(t.Context(), global, hour(0), hour(2), 90*time.Minute)
			require.Error(t, err, "step not a whole number of hours")
		}},
	}
}

func (s *suite) entriesTests() []test {
	return []test{
		{"Filters", func(t *testing.T) {
			st := s.fresh(t)
			entries := Gen(400, 9, "f")
			require.NoError(t, st.Append(t.Context(), entries...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			want := func(f store.LedgerFilter) []store.LedgerEntry {
				var out []store.LedgerEntry
				for _, e := range sorted(entries) {
					if f.Model != "" && e.Model != f.Model {
						continue
					}
					if !f.Since.IsZero() && e.EndedAt.Before(f.Since) {
						continue
					}
					if !f.Until.IsZero() && !e.EndedAt.Before(f.Until) {
						continue
					}
					if f.Scope != nil && !slices.Contains(e.Scopes(), *f.Scope) {
						continue
					}
					out = append(out, e)
				}
				return out
			}
			ref := func(k kernel.ScopeKind, id string) *kernel.ScopeRef { return &kernel.ScopeRef{Kind: k, ID: id} }
			filters := []store.LedgerFilter{
				{},
				{Scope: ref(kernel.ScopeGlobal, "")},
				{Scope: ref(kernel.ScopeKey, "key1")},
				{Scope: ref(kernel.ScopeUser, "user2")},
				{Scope: ref(kernel.ScopeTeam, "team0")},
				{Scope: ref(kernel.ScopeOrg, "org1")},
				{Scope: ref(kernel.ScopeCustomer, "cust2")},
				{Scope: ref(kernel.ScopeKey, "nobody")},
				{Scope: ref(kernel.ScopeTag, "feature=search")},
				{Scope: ref(kernel.ScopeTag, "env=prod")},
				{Scope: ref(kernel.ScopeTag, "feature=sea")},
				{Model: "model1"},
				{Since: base.Add(90 * time.Minute)},
				{Until: base.Add(2*time.Hour + 17*time.Second)},
				{Since: base.Add(time.Hour), Until: base.Add(3 * time.Hour), Model: "model0", Scope: ref(kernel.ScopeKey, "key3")},
				{Since: entries[7].EndedAt, Until: entries[7].EndedAt.Add(time.Microsecond)},
			}
			for i, f := range filters {
				w := norm(want(f))
				for _, page := range []int{7, 1000} {
					got := norm(all(t, st, f, page))
					if len(w) == 0 {
						require.Empty(t, got, "filter %d", i)
						continue
					}
					require.Equal(t, w, got, "filter %d page %d", i, page)
				}
			}
		}},
		{"DefaultLimitAndPages", func(t *testing.T) {
			st := s.fresh(t)
			entries := Gen(250, 10, "p")
			// Ties on EndedAt are ordered by request id.
			for i := 100; i < 110; i++ {
				entries[i].EndedAt = base.Add(time.Hour)
			}
			require.NoError(t, st.Append(t.Context(), entries...))
			require.NoError(t, st.Flush(timeout(t, 30*time.Second)))
			first, err := st.Entries(t.Context(), store.LedgerFilter{})
			require.NoError(t, err)
			require.Len(t, first, 100, "limit 0 means 100")
			want := norm(sorted(entries))
			require.Equal(t, want[:100], norm(first))
			second, err := st.Entries(t.Context(), store.LedgerFilter{After: first[99].RequestID, Limit: 120})
			require.NoError(t, err)
			require.Equal(t, want[100:220], norm(second))
			last, err := st.Entries(t.Context(), store.LedgerFilter{After: second[119].RequestID, Limit: 120})
			require.NoError(t, err)
			require.Equal(t, want[220:], norm(last))
		}},
	}
}

func (s *suite) auditTests() []test {
	return []test{
		{"AppendAndList", func(t *testing.T) {
			st := s.fresh(t)
			empty, err := st.ListAudit(t.Context(), 0, 0)
			require.NoError(t, err)
			require.Empty(t, empty)
			at := time.Date(2026, 2, 3, 4, 5, 6, 7000, time.UTC)
			var want []store.AuditEntry
			for i := range 130 {
				e := store.AuditEntry{
					At: at.Add(time.Duration(i) * time.Second), Actor: "admin-" + fmt.Sprint(i%3),
					Action: "key.create", Kind: store.KindKey, Target: fmt.Sprint("key", i),
				}
				if i%2 == 0 {
					e.Detail = fmt.Sprintf(`{"n":%d}`, i)
				}
				require.NoError(t, st.AppendAudit(t.Context(), e))
				want = append(want, e)
			}
			page, err := st.ListAudit(t.Context(), 0, 0)
			require.NoError(t, err)
			require.Len(t, page, 100, "limit 0 means 100")
			rest, err := st.ListAudit(t.Context(), page[99].ID, 50)
			require.NoError(t, err)
			require.Len(t, rest, 30)
			got := append(page, rest...)
			for i := range got {
				if i > 0 {
					require.Greater(t, got[i].ID, got[i-1].ID)
				}
				require.True(t, want[i].At.Equal(got[i].At), "entry %d at %s, want %s", i, got[i].At, want[i].At)
				w := want[i]
				w.ID, w.At = got[i].ID, got[i].At
				require.Equal(t, w, got[i])
			}
			tail, err := st.ListAudit(t.Context(), got[127].ID, 10)
			require.NoError(t, err)
			require.Len(t, tail, 2)
		}},
		{"ZeroTimeIsNow", func(t *testing.T) {
			st := s.fresh(t)
			before := time.Now().Add(-time.Second)
			require.NoError(t, st.AppendAudit(t.Context(), store.AuditEntry{Actor: "a", Action: "x", Kind: store.KindTeam, Target: "t"}))
			got, err := st.ListAudit(t.Context(), 0, 10)
			require.NoError(t, err)
			require.Len(t, got, 1)
			require.WithinRange(t, got[0].At, before, time.Now().Add(time.Second))
		}},
	}
}
