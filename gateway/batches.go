package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/tollgate-ai/tollgate/batch"
	"github.com/tollgate-ai/tollgate/edge"
	"github.com/tollgate-ai/tollgate/envoy"
	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/store"
)

// The batch poller (docs/batches.md): every Config.BatchPollInterval, one
// replica (the store's lease) polls the pending batches and settles the
// ended ones through the accountant: the batch's reservation settled with
// the total of its lines, each line in the ledger at the batch price; then,
// under the same lease, the background responses nobody polled
// (background.go).

// startBatches starts the poller.
func (g *Gateway) startBatches(ctx context.Context) {
	var id [6]byte
	_, _ = rand.Read(id[:])
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(id[:]))
	settler := batch.SettlerFunc(func(ctx context.Context, p *batch.Pending, entries []store.LedgerEntry) error {
		return g.Accountant.SettleBatch(ctx, p.ReservationID, entries)
	})
	opts := []batch.PollerOption{batch.WithClock(g.now), batch.WithLogger(g.log), batch.WithLease(2 * max(g.Config.BatchPollInterval, 30*time.Second))}
	if w := g.backgroundWork(); w != nil { // background.go: the background responses nobody polls
		opts = append(opts, batch.WithWork(w))
	}
	g.batches = batch.NewPoller(batch.NewStore(g.Store), holder, g.batchProvider, settler, opts...)
	if g.Config.BatchPollInterval <= 0 {
		return
	}
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.batches.Loop(ctx, g.Config.BatchPollInterval) }()
}

// batchProvider is the batch API of a pending batch's provider, with its
// credential opened.
func (g *Gateway) batchProvider(ctx context.Context, p *batch.Pending) (batch.Provider, error) {
	ep, err := batchCatalog{g}.Endpoint(ctx, p.Provider)
	if err != nil {
		return nil, fmt.Errorf("batch %s: %w", p.ID, err)
	}
	return batch.NewProvider(p.API, ep)
}

// The batch endpoints (batch.Service): served on the built-in data plane in
// process, and on the gateway's service listener (beside /mcp) for Envoy's
// batch routes (xds/batches.go).

// startBatchService makes the batch endpoints.
func (g *Gateway) startBatchService(context.Context) error {
	g.batchSvc = batch.NewService(batchCatalog{g}, g.Accountant, batch.NewStore(g.Store),
		batch.WithServiceClock(g.now), batch.WithServiceLogger(g.log))
	return nil
}

// batchEdge serves the batch endpoints on the built-in data plane.
func (g *Gateway) batchEdge() edge.Option {
	return func(e *edge.Edge) {
		for _, p := range envoy.BatchPaths {
			edge.WithService(p, g.batchSvc)(e)
		}
	}
}

// servicesHandler is the gateway's service listener (Envoy's service
// cluster): the batch endpoints on their paths, the MCP gateway on the rest.
func (g *Gateway) servicesHandler() http.Handler {
	if g.batchSvc == nil {
		return g.mcp
	}
	mux := http.NewServeMux()
	mux.Handle("/", g.mcp)
	for _, p := range envoy.BatchPaths {
		mux.Handle(p, g.batchSvc)
		mux.Handle(p+"/", g.batchSvc)
	}
	return mux
}

// batchCatalog serves batch.Catalog: keys and models from the processor's
// snapshot, providers (base URL, credential) from the store.
type batchCatalog struct{ g *Gateway }

var _ batch.Catalog = batchCatalog{}

// Authenticate implements batch.Catalog.
func (c batchCatalog) Authenticate(ctx context.Context, secret string) (*batch.Caller, error) {
	p, err := c.g.Catalog.Authenticate(ctx, secret)
	if err != nil {
		return nil, batch.ErrUnauthorized
	}
	return &batch.Caller{KeyID: p.KeyID, UserID: p.UserID, TeamID: p.TeamID, OrgID: p.OrgID, Scopes: p.Scopes}, nil
}

// Route implements batch.Catalog: the first deployment of the model's group
// (in the group's order) whose provider speaks api.
func (c batchCatalog) Route(ctx context.Context, caller *batch.Caller, model string, api batch.API, deployment string) (*batch.Route, error) {
	m, ok := c.g.Catalog.Snapshot().lookup(model)
	if !ok || len(m.targets) == 0 {
		return nil, batch.ErrModelNotFound
	}
	m = m.forName(model)
	if !allowed(&extproc.Principal{Scopes: caller.Scopes}, model, m.info.ID) {
		return nil, batch.ErrModelNotAllowed
	}
	for _, t := range m.targets {
		if (deployment != "" && t.Deployment != deployment) || !speaksBatch(store.ProviderType(t.Provider), api) {
			continue
		}
		d, _, err := store.Get[store.Deployment](ctx, c.g.Store, t.Deployment)
		if err != nil {
			return nil, fmt.Errorf("deployment %q: %w", t.Deployment, err)
		}
		ep, err := c.Endpoint(ctx, d.Provider)
		if err != nil {
			return nil, err
		}
		return &batch.Route{
			Model: t.Model, Deployment: t.Deployment, Provider: d.Provider, ProviderModel: t.ProviderModel,
			Price: t.Price, DefaultMaxTokens: t.DefaultMaxTokens, Endpoint: ep,
		}, nil
	}
	return nil, batch.ErrNoDeployment
}

// speaksBatch reports whether a provider type serves a batch API.
func speaksBatch(t store.ProviderType, api batch.API) bool {
	switch api {
	case batch.APIOpenAI: // Azure's resources serve it on their v1 API
		return t == store.ProviderOpenAI || t == store.ProviderAzure
	case batch.APIAnthropic:
		return t == store.ProviderAnthropic
	}
	return false
}

// Endpoint implements batch.Catalog: the provider's base URL and its
// credential, opened.
func (c batchCatalog) Endpoint(ctx context.Context, id string) (batch.Endpoint, error) {
	prov, _, err := store.Get[store.Provider](ctx, c.g.Store, id)
	if err != nil {
		return batch.Endpoint{}, fmt.Errorf("provider %q: %w", id, err)
	}
	var key []byte
	if len(prov.Credential) > 0 {
		if key, err = c.g.Sealer.Open(prov.Credential); err != nil {
			return batch.Endpoint{}, fmt.Errorf("provider %q: %w", id, err)
		}
	}
	return batch.Endpoint{BaseURL: prov.BaseURL, APIKey: string(key), Version: prov.APIVersion, Azure: prov.Type == store.ProviderAzure}, nil
}

// SettleBatchesNow polls the pending batches once, now, as the next tick
// would, and returns how many it settled.
func (g *Gateway) SettleBatchesNow(ctx context.Context) (int, error) {
	if g.batches == nil {
		return 0, nil
	}
	return g.batches.Tick(ctx)
}
