package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/store"
)

// The batch poller (docs/batches.md): every Config.BatchPollInterval, one
// replica (the store's lease) polls the pending batches and settles the
// ended ones through the accountant: the batch's reservation settled with
// the total of its lines, each line in the ledger at the batch price.

// startBatches starts the poller.
func (g *Gateway) startBatches(ctx context.Context) {
	var id [6]byte
	_, _ = rand.Read(id[:])
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(id[:]))
	settler := batch.SettlerFunc(func(ctx context.Context, p *batch.Pending, entries []store.LedgerEntry) error {
		return g.Accountant.SettleBatch(ctx, p.ReservationID, entries)
	})
	g.batches = batch.NewPoller(batch.NewStore(g.Store), holder, g.batchProvider, settler,
		batch.WithClock(g.now), batch.WithLogger(g.log), batch.WithLease(2*max(g.Config.BatchPollInterval, 30*time.Second)))
	if g.Config.BatchPollInterval <= 0 {
		return
	}
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.batches.Loop(ctx, g.Config.BatchPollInterval) }()
}

// batchProvider is the batch API of a pending batch's provider, with its
// credential opened.
func (g *Gateway) batchProvider(ctx context.Context, p *batch.Pending) (batch.Provider, error) {
	prov, _, err := store.Get[store.Provider](ctx, g.Store, p.Provider)
	if err != nil {
		return nil, fmt.Errorf("batch %s: provider %q: %w", p.ID, p.Provider, err)
	}
	var key []byte
	if len(prov.Credential) > 0 {
		if key, err = g.Sealer.Open(prov.Credential); err != nil {
			return nil, fmt.Errorf("batch %s: provider %q: %w", p.ID, p.Provider, err)
		}
	}
	return batch.NewProvider(p.API, batch.Endpoint{BaseURL: prov.BaseURL, APIKey: string(key), Version: prov.APIVersion})
}

// SettleBatchesNow polls the pending batches once, now, as the next tick
// would, and returns how many it settled.
func (g *Gateway) SettleBatchesNow(ctx context.Context) (int, error) {
	if g.batches == nil {
		return 0, nil
	}
	return g.batches.Tick(ctx)
}
