package gateway

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tollgate-ai/tollgate/extproc"
	"github.com/tollgate-ai/tollgate/store"
)

// DefaultResponsesRetention is how long stored responses of the Responses
// API are kept when Config.ResponsesRetention is zero: 30 days, as OpenAI
// keeps them.
const DefaultResponsesRetention = 30 * 24 * time.Hour

// responseStore adapts the store's stored responses to the processor's
// ResponseStore, with the retention: a response expires Retention after it
// was made.
type responseStore struct {
	st        store.Responses
	retention time.Duration
	now       func() time.Time
}

var _ extproc.ResponseStore = (*responseStore)(nil)

// newResponseStore returns the processor's store of responses, nil when the
// backend keeps none.
func newResponseStore(st store.Store, retention time.Duration, now func() time.Time) *responseStore {
	rs, ok := st.(store.Responses)
	if !ok {
		return nil
	}
	if retention <= 0 {
		retention = DefaultResponsesRetention
	}
	return &responseStore{st: rs, retention: retention, now: now}
}

func (r *responseStore) PutResponse(ctx context.Context, sr *extproc.StoredResponse) error {
	return r.st.PutResponse(ctx, store.StoredResponse{
		ID: sr.ID, KeyID: sr.KeyID, Response: sr.Response, Input: sr.Input,
		CreatedAt: sr.CreatedAt, ExpiresAt: sr.CreatedAt.Add(r.retention),
	})
}

func (r *responseStore) GetResponse(ctx context.Context, keyID, id string) (*extproc.StoredResponse, error) {
	sr, err := r.st.GetResponse(ctx, keyID, id, r.now())
	if errors.Is(err, store.ErrNotFound) {
		return nil, extproc.ErrResponseNotFound
	}
	if err != nil {
		return nil, err
	}
	return &extproc.StoredResponse{ID: sr.ID, KeyID: sr.KeyID, Response: sr.Response, Input: sr.Input, CreatedAt: sr.CreatedAt}, nil
}

func (r *responseStore) DeleteResponse(ctx context.Context, keyID, id string) error {
	err := r.st.DeleteResponse(ctx, keyID, id)
	if errors.Is(err, store.ErrNotFound) {
		return extproc.ErrResponseNotFound
	}
	return err
}

// purge removes expired responses every interval until ctx ends (expired ones
// are already invisible: this only frees the space).
func (r *responseStore) purge(ctx context.Context, interval time.Duration, log *slog.Logger) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if n, err := r.st.PurgeResponses(ctx, r.now()); err != nil && ctx.Err() == nil {
				log.Warn("purge stored responses failed", "err", err)
			} else if n > 0 {
				log.Info("purged stored responses", "count", n)
			}
		}
	}
}

// processorResponseOptions are the processor options of stored responses, and
// the purge loop to run (nil when the store keeps none).
func processorResponseOptions(st store.Store, cfg *Config, now func() time.Time, log *slog.Logger) ([]extproc.Option, func(context.Context) error) {
	rs := newResponseStore(st, cfg.ResponsesRetention, now)
	if rs == nil {
		return nil, nil
	}
	return []extproc.Option{extproc.WithResponseStore(rs)}, func(ctx context.Context) error { return rs.purge(ctx, time.Hour, log) }
}
