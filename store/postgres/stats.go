package postgres

import "github.com/tollgate-ai/tollgate/store/groupcommit"

// LedgerStats returns the ledger writers' counters, summed (metrics, and the
// readiness check that the ledger is not stalled).
func (s *Store) LedgerStats() groupcommit.Stats {
	var t groupcommit.Stats
	for _, w := range s.writers {
		st := w.Stats()
		t.Batches += st.Batches
		t.Entries += st.Entries
		t.FlushErrors += st.FlushErrors
		t.QueueDepth += st.QueueDepth
		t.FlushTime += st.FlushTime
	}
	return t
}
