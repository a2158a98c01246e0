package store

import (
	"context"
	"time"
)

// StoredResponse is one response of OpenAI's Responses API kept by the
// gateway (store: true on a translated provider), so that
// previous_response_id, GET /v1/responses/{id} and its input_items work. It is
// visible only to the key that made it.
type StoredResponse struct {
	ID    string // resp_…
	KeyID string // the virtual key that created it
	// Response is the response object (JSON), Input the input items it was
	// made from, history from previous_response_id included (a JSON array).
	Response  []byte
	Input     []byte
	CreatedAt time.Time
	ExpiresAt time.Time // retention: after it the response is gone
}

// Responses keeps stored responses. Every backend implements it; it is not
// part of Store so that narrow users (the processor) depend on it alone.
type Responses interface {
	// PutResponse stores (or replaces) a response.
	PutResponse(ctx context.Context, r StoredResponse) error
	// GetResponse returns the response of that id made by that key, unexpired
	// at now; ErrNotFound otherwise (another key's response is not found).
	GetResponse(ctx context.Context, keyID, id string, now time.Time) (StoredResponse, error)
	// DeleteResponse removes the response of that id made by that key;
	// ErrNotFound when there is none.
	DeleteResponse(ctx context.Context, keyID, id string) error
	// PurgeResponses removes the responses expired at now and returns how
	// many it removed.
	PurgeResponses(ctx context.Context, now time.Time) (int64, error)
}
