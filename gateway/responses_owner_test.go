package gateway

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/groupcommit"
	"github.com/tollgate-ai/tollgate/store/sqlite"
)

// TestResponseOwnersWithTheLedger: a native response id settled with its
// request is found by the processor's lookup right after the settlement
// (the ledger's group commit is flushed on a miss), with the retention; an
// unknown id is ErrResponseNotFound; a forgotten one is gone.
func TestResponseOwnersWithTheLedger(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"), sqlite.WithLedger(groupcommit.WithWindow(time.Hour)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close(context.Background()) })
	now := time.Unix(1_750_000_000, 0).UTC()
	clock := func() time.Time { return now }
	ro := &responseOwners{st: st, ledger: st, now: clock}

	o := &extproc.ResponseOwner{ID: "resp_n1", KeyID: "k1", Deployment: "d2", Model: "m", Store: true}
	e := ledgerEntry(&extproc.Record{RequestID: "r1", Principal: &extproc.Principal{KeyID: "k1"}, Model: "m", Deployment: "d2", StartedAt: now, EndedAt: now})
	e.Owner = responseOwner(o, now, time.Hour)
	require.NoError(t, st.Append(ctx, e)) // queued: the window holds it

	got, err := ro.ResponseOwner(ctx, "resp_n1")
	require.NoError(t, err, "a miss flushes the ledger and reads again")
	require.Equal(t, o, got)
	_, err = ro.ResponseOwner(ctx, "resp_unknown")
	require.ErrorIs(t, err, extproc.ErrResponseNotFound)

	now = now.Add(time.Hour) // the retention
	_, err = ro.ResponseOwner(ctx, "resp_n1")
	require.ErrorIs(t, err, extproc.ErrResponseNotFound)
	require.NoError(t, ro.ForgetResponse(ctx, "resp_n1"))
	require.ErrorIs(t, ro.ForgetResponse(ctx, "resp_n1"), extproc.ErrResponseNotFound)

	require.Equal(t, now.Add(DefaultResponsesRetention), responseOwner(o, now, 0).ExpiresAt)
	var _ store.ResponseOwners = st
}

// TestResponseOwnerFromAnotherReplica: an id another replica handed out and
// has not committed is not found by the lookup (its flush is of this
// replica's ledger), and is found by AwaitResponseOwner once that replica
// commits while it waits (two stores on one database file stand for two
// replicas: B's window holds the row until it flushes); an id no replica holds is ErrResponseNotFound after the waits,
// and a cancelled wait ends with its context.
func TestResponseOwnerFromAnotherReplica(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	open := func() *sqlite.Store {
		st, err := sqlite.Open(ctx, path, sqlite.WithLedger(groupcommit.WithWindow(time.Hour)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close(context.Background()) })
		return st
	}
	a, b := open(), open()
	now := time.Now().UTC()
	clock := func() time.Time { return now }

	o := &extproc.ResponseOwner{ID: "resp_b1", KeyID: "k1", Deployment: "d2", Model: "m", Store: true}
	e := ledgerEntry(&extproc.Record{RequestID: "rb1", Principal: &extproc.Principal{KeyID: "k1"}, Model: "m", Deployment: "d2", StartedAt: now, EndedAt: now})
	e.Owner = responseOwner(o, now, time.Hour)
	require.NoError(t, b.Append(ctx, e)) // queued on replica B

	onA := &responseOwners{st: a, ledger: a, now: clock}
	_, err := onA.ResponseOwner(ctx, "resp_b1")
	require.ErrorIs(t, err, extproc.ErrResponseNotFound, "not committed on B yet")

	// B commits while A waits (long waits here: a loaded machine may be slow
	// to commit; the default ones are for a replica's commit window).
	slow := &responseOwners{st: a, ledger: a, now: clock, waits: []time.Duration{10 * time.Millisecond, 2 * time.Second, 10 * time.Second}}
	type found struct {
		o   *extproc.ResponseOwner
		err error
	}
	done := make(chan found, 1)
	go func() { o, err := slow.AwaitResponseOwner(ctx, "resp_b1"); done <- found{o, err} }()
	require.NoError(t, b.Flush(ctx))
	got := <-done
	require.NoError(t, got.err, "B commits within A's waits")
	require.Equal(t, o, got.o)

	_, err = onA.AwaitResponseOwner(ctx, "resp_nowhere")
	require.ErrorIs(t, err, extproc.ErrResponseNotFound)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = onA.AwaitResponseOwner(cctx, "resp_nowhere")
	require.ErrorIs(t, err, context.Canceled)
}
