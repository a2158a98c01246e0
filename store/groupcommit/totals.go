package groupcommit

import (
	"cmp"
	"slices"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Total is what one batch adds to one scope in one hour.
type Total struct {
	Scope    kernel.ScopeRef
	Hour     time.Time // start of the hour, UTC
	Cost     kernel.Money
	Requests int64
	Tokens   int64
	// Cache: the cache hits, misses and savings among them.
	Cache store.CacheCounts
}

// Hour is the start of the UTC hour holding t: the spend bucket of an entry
// that ended at t.
func Hour(t time.Time) time.Time {
	return t.UTC().Truncate(time.Hour)
}

type totalKey struct {
	kind kernel.ScopeKind
	id   string
	hour int64
}

// Totals coalesces a batch into one Total per (scope, hour of EndedAt), every
// entry counted once per scope it is charged to (see store.LedgerEntry.Scopes).
// The result is sorted by scope kind, scope id, then hour, so writers that
// update total rows in this order always lock them in the same order. The
// caller removes repeated request ids first (see Unique).
func Totals(batch []store.LedgerEntry) []Total {
	idx := make(map[totalKey]int, 8)
	var out []Total
	var refs [8]kernel.ScopeRef // an entry's scopes, tags beyond one aside
	for i := range batch {
		e := &batch[i]
		h := Hour(e.EndedAt)
		tokens := e.Usage.Total()
		for _, ref := range e.AppendScopes(refs[:0]) {
			k := totalKey{ref.Kind, ref.ID, h.Unix()}
			j, ok := idx[k]
			if !ok {
				j = len(out)
				idx[k] = j
				out = append(out, Total{Scope: ref, Hour: h})
			}
			out[j].Cost += e.Cost
			out[j].Requests++
			out[j].Tokens += tokens
			if e.Cache != store.CacheNone {
				out[j].Cache.Add(store.CacheCountsOf(e))
			}
		}
	}
	slices.SortFunc(out, func(a, b Total) int {
		return cmp.Or(
			cmp.Compare(a.Scope.Kind, b.Scope.Kind),
			cmp.Compare(a.Scope.ID, b.Scope.ID),
			a.Hour.Compare(b.Hour),
		)
	})
	return out
}

// Unique returns the entries of batch whose request id did not appear earlier
// in it, in order. It returns batch itself when there is no repeat.
func Unique(batch []store.LedgerEntry) []store.LedgerEntry {
	seen := make(map[string]struct{}, len(batch))
	var out []store.LedgerEntry
	for i := range batch {
		id := batch[i].RequestID
		if _, dup := seen[id]; dup {
			if out == nil {
				out = append(make([]store.LedgerEntry, 0, len(batch)), batch[:i]...)
			}
			continue
		}
		seen[id] = struct{}{}
		if out != nil {
			out = append(out, batch[i])
		}
	}
	if out == nil {
		return batch
	}
	return out
}
