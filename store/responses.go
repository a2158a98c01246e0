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
	Response []byte
	Input    []byte
	// Run is the run the response belongs to (issue 36): the run name its
	// request was in, else its own id (a chain's first response); a
	// request continuing it (previous_response_id) is in the same run.
	Run       string
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

// ResponseOwner is a response (or conversation) id that a native upstream
// (a provider serving the Responses API itself) made through the gateway:
// which key owns it and which deployment holds it. previous_response_id,
// conversation, GET/DELETE /v1/responses/{id}, its input_items and cancel
// are admitted only for that key and routed to that deployment.
type ResponseOwner struct {
	ID         string // resp_… or conv_…
	KeyID      string // the virtual key that created it
	Deployment string // the deployment that holds it
	Model      string // the model group the client asked for
	// Store: the response was made with store true (retrievable upstream);
	// Background: with background true (pollable until it completes).
	Store      bool
	Background bool
	// Run is the run the response belongs to (StoredResponse.Run; "" for
	// a conversation).
	Run       string
	CreatedAt time.Time
	ExpiresAt time.Time // retention: after it the id is unknown
	// Pending is a settlement deferred until the response finishes (a
	// background response polled later), opaque to the store; nil when
	// there is nothing (left) to settle.
	Pending []byte
}

// ResponseOwners reads the owners of native response ids. They are written
// with the ledger (LedgerEntry.Owner), in the same group commit: a reader
// that misses an id made a moment ago flushes the ledger and reads again.
type ResponseOwners interface {
	// GetResponseOwner returns the owner of an id, unexpired at now;
	// ErrNotFound otherwise.
	GetResponseOwner(ctx context.Context, id string, now time.Time) (ResponseOwner, error)
	// DeleteResponseOwner forgets an id (the response was deleted);
	// ErrNotFound when there is none.
	DeleteResponseOwner(ctx context.Context, id string) error
	// PutResponseOwner records an owner at once, outside the ledger (a
	// background response whose settlement waits: there is no ledger row
	// yet to carry it); the first owner of an id stays.
	PutResponseOwner(ctx context.Context, o ResponseOwner) error
	// ClaimResponseSettlement takes the pending settlement of an id and
	// clears it, atomically: of concurrent claims one gets it, the others
	// (and every later one) ErrNotFound.
	ClaimResponseSettlement(ctx context.Context, id string) ([]byte, error)
	// PendingResponseOwners lists the owners whose settlement is still
	// pending (expired ones too: a settlement outlives the id's
	// retention), oldest first, for the poller that settles the background
	// responses nobody polls.
	PendingResponseOwners(ctx context.Context) ([]ResponseOwner, error)
}
