package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// TestResponseStoreRetention: a stored response is found by its key until
// the retention has passed, never by another key; the processor's
// ErrResponseNotFound stands for the store's ErrNotFound.
func TestResponseStoreRetention(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_750_000_000, 0)
	clock := func() time.Time { return now }
	rs := newResponseStore(memstore.New(), time.Hour, clock)
	require.NotNil(t, rs)
	require.NoError(t, rs.PutResponse(ctx, &extproc.StoredResponse{ID: "resp_1", KeyID: "k", Response: []byte(`{}`), Input: []byte(`[]`), CreatedAt: now}))
	got, err := rs.GetResponse(ctx, "k", "resp_1")
	require.NoError(t, err)
	require.Equal(t, "resp_1", got.ID)
	_, err = rs.GetResponse(ctx, "other", "resp_1")
	require.ErrorIs(t, err, extproc.ErrResponseNotFound)
	now = now.Add(time.Hour)
	_, err = rs.GetResponse(ctx, "k", "resp_1")
	require.ErrorIs(t, err, extproc.ErrResponseNotFound)
	require.NoError(t, rs.DeleteResponse(ctx, "k", "resp_1")) // still there until purged
	require.ErrorIs(t, rs.DeleteResponse(ctx, "k", "resp_1"), extproc.ErrResponseNotFound)
	require.Equal(t, DefaultResponsesRetention, newResponseStore(memstore.New(), 0, clock).retention)
}
