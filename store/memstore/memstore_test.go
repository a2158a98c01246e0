package memstore_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
	"github.com/tollgate-ai/tollgate/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memstore.New() })
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(*testing.B) store.Store { return memstore.New() })
}
