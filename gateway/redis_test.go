package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/accounting"
	"github.com/tollgate-ai/tollgate/internal/testenv"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store/memstore"
)

// Two replicas (two gateways, each with its own Redis client and data plane)
// share one store and one Redis: an rpm limit holds across both, not per replica.
func TestReplicasShareLimitsThroughRedis(t *testing.T) {
	url := testenv.Redis(t)
	opts, err := goredis.ParseURL(url)
	require.NoError(t, err)
	st := memstore.New()
	prefix := fmt.Sprintf("gw-test-%d", time.Now().UnixNano())
	var replicas []*running
	for range 2 {
		client := goredis.NewClient(opts)
		t.Cleanup(func() { _ = client.Close() })
		c := accounting.NewRedisCounters(client, accounting.LedgerSeed(st), accounting.WithPrefix(prefix))
		t.Cleanup(c.Close)
		replicas = append(replicas, startWith(t, false, st, c))
	}
	a := replicas[0]
	key := a.key(t, "shared", kernel.Limits{RPM: 6})
	body := `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	warm := a.key(t, "warm", kernel.Limits{})
	for _, r := range replicas { // both replicas know the key and the route
		r.warm(t, warm, body)
	}
	// Stay inside one rpm window.
	if s := time.Now().Second(); s > 50 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}

	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := replicas[i%2].status(key, body)
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, map[int]int{http.StatusOK: 6, http.StatusTooManyRequests: 14}, codes)

	// Settled spend reached the shared store's ledger exactly once per request.
	require.NoError(t, st.Flush(context.Background()))
	spent, err := st.ScopeSpend(context.Background(), kernel.ScopeRef{Kind: kernel.ScopeKey, ID: "shared"}, time.Time{}, time.Time{})
	require.NoError(t, err)
	require.Positive(t, spent)
}
