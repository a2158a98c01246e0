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
