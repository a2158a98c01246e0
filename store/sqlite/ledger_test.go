package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
	"github.com/tollgate-ai/tollgate/store/sqlite"
	"github.com/tollgate-ai/tollgate/store/storetest"
)

// TestLedgerRepeatsBatchAfterBatch writes batch after batch, each repeating
// request ids of its own and of earlier batches, through inserts of every
// size (16, 4 and 1 rows): each batch must add exactly its new entries, to
// the rows and to the totals, whatever statement the repeats fell in.
func TestLedgerRepeatsBatchAfterBatch(t *testing.T) {
	st := openAt(t, filepath.Join(t.TempDir(), "tollgate.db"), sqlite.WithInsertRows(16),
		sqlite.WithLedger(groupcommit.WithWindow(time.Hour)))
	t.Cleanup(func() { require.NoError(t, st.Close(t.Context())) })
	all := storetest.Gen(400, 3, "rep")
	var written []store.LedgerEntry
	for i, size := range []int{1, 7, 23, 40, 61, 5, 90} {
		fresh := all[:size]
		all = all[size:]
		batch := append([]store.LedgerEntry(nil), fresh...)
		batch = append(batch, fresh[:size/2]...) // repeats within the batch
		if len(written) > 0 {
			old := written[(i*13)%len(written)]
			old.Cost += 1000 // a retry with other values is still ignored
			batch = append([]store.LedgerEntry{old}, batch...)
		}
		require.NoError(t, st.Append(t.Context(), batch...))
		require.NoError(t, st.Flush(t.Context()))
		written = append(written, fresh...)

		got, err := st.Entries(t.Context(), store.LedgerFilter{Limit: 1000})
		require.NoError(t, err)
		require.Len(t, got, len(written), "batch %d", i)
		var want kernel.Money
		for _, e := range written {
			want += e.Cost
		}
		spent, err := st.ScopeSpend(t.Context(), kernel.ScopeRef{Kind: kernel.ScopeGlobal}, time.Time{}, time.Time{})
		require.NoError(t, err)
		require.Equal(t, want, spent, "batch %d", i)
	}
}

// TestLedgerRowShapes writes batches mixing runs of plain rows (no run,
// tags, unit, cache or requested model; priced) with runs of rows that set
// those columns, through inserts of every size: every row reads back as it
// was written, whichever statement shape carried it.
func TestLedgerRowShapes(t *testing.T) {
	st := openAt(t, filepath.Join(t.TempDir(), "tollgate.db"), sqlite.WithInsertRows(16),
		sqlite.WithLedger(groupcommit.WithWindow(time.Hour)))
	t.Cleanup(func() { require.NoError(t, st.Close(t.Context())) })
	all := storetest.Gen(300, 5, "shape")
	for i := range all {
		e := &all[i]
		switch (i / 9) % 3 {
		case 0: // plain
			e.RunID, e.Tags, e.Unpriced = "", nil, false
		case 1: // one later column each
			e.RunID, e.Tags, e.Unpriced = "", nil, false
			switch i % 5 {
			case 0:
				e.RequestedModel = "alias"
			case 1:
				e.Unit, e.Quantity = kernel.UnitImages, 3
			case 2:
				e.Cache, e.CacheSaved = store.CacheHit, 12
			case 3:
				e.Unpriced = true
			case 4:
				e.Tags = []string{"team=a"}
			}
		}
	}
	want := map[string]store.LedgerEntry{}
	for _, size := range []int{1, 17, 40, 3, 90, 64, 85} {
		batch := append([]store.LedgerEntry(nil), all[:size]...)
		batch = append(batch, all[:size/3]...) // repeats within the batch
		for _, e := range all[:size] {
			want[e.RequestID] = e
		}
		all = all[size:]
		require.NoError(t, st.Append(t.Context(), batch...))
		require.NoError(t, st.Flush(t.Context()))
	}
	got, err := st.Entries(t.Context(), store.LedgerFilter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, got, len(want))
	var sum store.SpendPoint
	for _, e := range got {
		w := want[e.RequestID]
		w.StartedAt, w.EndedAt = w.StartedAt.UTC(), w.EndedAt.UTC()
		require.Equal(t, w, e, e.RequestID)
		sum.Cost, sum.Requests, sum.Tokens = sum.Cost+w.Cost, sum.Requests+1, sum.Tokens+w.Usage.Total()
		if w.Cache != store.CacheNone {
			sum.Cache.Add(store.CacheCountsOf(&w))
		}
	}
	// The totals, plain and with cache counts, add up to the rows.
	day := time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC)
	series, err := st.Series(t.Context(), kernel.ScopeRef{Kind: kernel.ScopeGlobal}, day, day.AddDate(0, 0, 2), 48*time.Hour)
	require.NoError(t, err)
	require.Len(t, series, 1)
	sum.Start = series[0].Start
	require.Equal(t, sum, series[0])
}
