package groupcommit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
)

func TestTotals(t *testing.T) {
	h0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	// 11:30 in UTC+2 is 09:30 UTC: buckets are UTC hours.
	east := time.FixedZone("east", 2*3600)
	global := kernel.ScopeRef{Kind: kernel.ScopeGlobal}
	key := func(id string) kernel.ScopeRef { return kernel.ScopeRef{Kind: kernel.ScopeKey, ID: id} }
	team := kernel.ScopeRef{Kind: kernel.ScopeTeam, ID: "t"}
	use := kernel.Usage{Input: 10, Output: 5, Reasoning: 1}

	tests := []struct {
		name  string
		batch []store.LedgerEntry
		want  []groupcommit.Total
	}{
		{name: "empty", batch: nil, want: nil},
		{
			name: "one entry charges global and its scopes",
			batch: []store.LedgerEntry{
				{RequestID: "a", KeyID: "k1", TeamID: "t", Cost: 7, Usage: use, EndedAt: h0.Add(59 * time.Minute)},
			},
			want: []groupcommit.Total{
				{Scope: global, Hour: h0, Cost: 7, Requests: 1, Tokens: 16},
				{Scope: team, Hour: h0, Cost: 7, Requests: 1, Tokens: 16},
				{Scope: key("k1"), Hour: h0, Cost: 7, Requests: 1, Tokens: 16},
			},
		},
		{
			name: "coalesced per scope and hour, sorted by kind, id, hour",
			batch: []store.LedgerEntry{
				{RequestID: "a", KeyID: "k2", Cost: 1, Usage: use, EndedAt: h0.Add(time.Hour)},
				{RequestID: "b", KeyID: "k1", Cost: 2, Usage: use, EndedAt: h0.Add(90 * time.Minute)},
				{RequestID: "c", KeyID: "k1", Cost: 3, Usage: use, EndedAt: h0},
				{RequestID: "d", KeyID: "k1", Cost: 4, Usage: use, EndedAt: time.Date(2026, 3, 1, 11, 30, 0, 0, east)},
			},
			want: []groupcommit.Total{
				{Scope: global, Hour: h0.Add(-time.Hour), Cost: 4, Requests: 1, Tokens: 16},
				{Scope: global, Hour: h0, Cost: 3, Requests: 1, Tokens: 16},
				{Scope: global, Hour: h0.Add(time.Hour), Cost: 3, Requests: 2, Tokens: 32},
				{Scope: key("k1"), Hour: h0.Add(-time.Hour), Cost: 4, Requests: 1, Tokens: 16},
				{Scope: key("k1"), Hour: h0, Cost: 3, Requests: 1, Tokens: 16},
				{Scope: key("k1"), Hour: h0.Add(time.Hour), Cost: 2, Requests: 1, Tokens: 16},
				{Scope: key("k2"), Hour: h0.Add(time.Hour), Cost: 1, Requests: 1, Tokens: 16},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := groupcommit.Totals(tc.batch)
			require.Equal(t, tc.want, got)
			// Batched equals sequential: summing per-entry totals gives the same.
			var seq []groupcommit.Total
			for _, e := range tc.batch {
				seq = merge(seq, groupcommit.Totals([]store.LedgerEntry{e}))
			}
			require.Len(t, seq, len(tc.want))
			for _, w := range tc.want {
				require.Contains(t, seq, w)
			}
		})
	}
}

func merge(acc, add []groupcommit.Total) []groupcommit.Total {
	for _, a := range add {
		found := false
		for i := range acc {
			if acc[i].Scope == a.Scope && acc[i].Hour.Equal(a.Hour) {
				acc[i].Cost += a.Cost
				acc[i].Requests += a.Requests
				acc[i].Tokens += a.Tokens
				found = true
			}
		}
		if !found {
			acc = append(acc, a)
		}
	}
	return acc
}

func TestUnique(t *testing.T) {
	e := func(id string, cost kernel.Money) store.LedgerEntry {
		return store.LedgerEntry{RequestID: id, Cost: cost}
	}
	tests := []struct {
		name  string
		batch []store.LedgerEntry
		want  []store.LedgerEntry
	}{
		{name: "empty", batch: nil, want: nil},
		{name: "no repeats", batch: []store.LedgerEntry{e("a", 1), e("b", 2)}, want: []store.LedgerEntry{e("a", 1), e("b", 2)}},
		{name: "first occurrence wins", batch: []store.LedgerEntry{e("a", 1), e("b", 2), e("a", 3), e("c", 4), e("b", 5)}, want: []store.LedgerEntry{e("a", 1), e("b", 2), e("c", 4)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, groupcommit.Unique(tc.batch))
		})
	}
}
