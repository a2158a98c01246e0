package gateway

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// Replicas starting together on one store agree on one retry token key, and a
// replica started later reads it.
func TestReplicasShareOneTokenKey(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := sharedTokenKey(ctx, st)
			require.NoError(t, err)
			keys[i] = k
		})
	}
	wg.Wait()
	require.Len(t, keys[0], 32)
	for _, k := range keys {
		require.Equal(t, keys[0], k)
	}
	later, err := sharedTokenKey(ctx, st)
	require.NoError(t, err)
	require.Equal(t, keys[0], later)

	objs, err := st.List(ctx, store.KindSecret, "", 0)
	require.NoError(t, err)
	require.Len(t, objs, 1)
}

// A stored secret that is not a key stops the start with an error rather than
// signing with a weak one.
func TestTokenKeyRefusesABadStoredSecret(t *testing.T) {
	ctx := context.Background()
	st := memstore.New()
	_, err := st.Put(ctx, store.Object{Kind: store.KindSecret, ID: tokenKeyID, Doc: []byte(`{"key":"c2hvcnQ="}`)}, 0)
	require.NoError(t, err)
	_, err = sharedTokenKey(ctx, st)
	require.ErrorContains(t, err, "is not a key")
}
