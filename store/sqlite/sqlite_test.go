package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/sqlite"
	"github.com/tollgate-ai/tollgate/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func openAt(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sqlite.Open(ctx, path, opts...)
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t,
		func(t *testing.T) store.Store { return openAt(t, filepath.Join(t.TempDir(), "tollgate.db")) },
		storetest.WithReopen(func(t *testing.T, closed store.Store) store.Store {
			return openAt(t, closed.(*sqlite.Store).Path())
		}),
	)
}

// TestConformanceSmallInserts runs the suite with 16- and 4-row INSERT
// statements, so that the small batches of the suite also take the multi-row
// path (repeats within one statement, remainders row by row).
func TestConformanceSmallInserts(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openAt(t, filepath.Join(t.TempDir(), "tollgate.db"), sqlite.WithInsertRows(16))
	})
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openAt(b, filepath.Join(b.TempDir(), "tollgate.db")) })
}
