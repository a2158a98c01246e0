package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/postgres"
	"github.com/tollgate-ai/tollgate/store/storetest"
)

func openUnmanaged(t testing.TB, u string) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, u, postgres.WithMaxConns(8))
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	urls := map[store.Store]string{}
	storetest.Run(t, func(t *testing.T) store.Store {
		u := testenv.FreshPostgres(t)
		s := openUnmanaged(t, u)
		mu.Lock()
		urls[s] = u
		mu.Unlock()
		return s
	}, storetest.WithReopen(func(t *testing.T, closed store.Store) store.Store {
		mu.Lock()
		u := urls[closed]
		mu.Unlock()
		s := openUnmanaged(t, u)
		mu.Lock()
		urls[s] = u
		mu.Unlock()
		return s
	}))
}

func BenchmarkConformance(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		return openUnmanaged(b, testenv.FreshPostgres(b))
	})
}
