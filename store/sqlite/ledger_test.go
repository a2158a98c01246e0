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
