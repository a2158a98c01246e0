package accounting_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// downLedger queues entries in memory and cannot flush while down.
type downLedger struct {
	*memstore.Store
	down atomic.Bool
}

func (l *downLedger) Flush(ctx context.Context) error {
	if l.down.Load() {
		return errors.New("ledger down")
	}
	return l.Store.Flush(ctx)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestPendingAndWarning: while the ledger cannot flush, Pending counts the
// settlements waiting and the accountant warns (rate-limited); once it
// flushes, Pending is back to zero.
func TestPendingAndWarning(t *testing.T) {
	ms := memstore.New()
	l := &downLedger{Store: ms}
	l.down.Store(true)
	var logs syncBuffer
	a := accounting.NewLocalAccountant(l, ms, time.Now, slog.New(slog.NewTextHandler(&logs, nil)),
		accounting.WithLedgerWarnEvery(time.Hour))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); a.ExpireLoop(ctx, time.Hour) }()
	defer func() { cancel(); <-done }()

	scope := kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "k"}
	for i := range 7 {
		id := string(rune('a' + i))
		d, err := a.Admit(ctx, &kernel.AdmitRequest{ID: id, Scopes: []kernel.Scope{{Ref: scope, Limits: &kernel.Limits{}}}, Model: "m"})
		require.NoError(t, err)
		require.True(t, d.Admitted)
		_, err = a.Settle(ctx, store.LedgerEntry{RequestID: id, KeyID: "k", Status: kernel.StatusCompleted})
		require.NoError(t, err)
	}
	require.Equal(t, 7, a.Pending())
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "ledger cannot flush") }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 7, a.Pending())
	require.Contains(t, logs.String(), "pending=7")

	l.down.Store(false)
	require.Eventually(t, func() bool { return a.Pending() == 0 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, strings.Count(logs.String(), "ledger cannot flush"), "rate-limited to one warning an hour")
}
