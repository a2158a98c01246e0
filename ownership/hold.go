package ownership

import (
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Deferred is the settlement of a background response, kept until it
// finishes: the record to settle (the processor's) and the reservation it
// releases.
type Deferred[R any] struct {
	Record R
	// Hold is what the request's admission reserved; nil when unknown
	// (kept by an older gateway).
	Hold *Hold
}

// Hold is a reservation waiting for a background response to finish, as
// its admission made it: enough to reserve it again after a restart of
// counters kept in one process (gateway/start.go, restoreHolds), so that
// its settlement still finds it.
type Hold struct {
	Scopes      []kernel.ScopeRef `json:"scopes"`
	Model       string            `json:"model"`
	PromptBytes int64             `json:"prompt_bytes"`
	MaxTokens   int64             `json:"max_tokens"` // the output bound reserved
	Price       kernel.Price      `json:"price"`
	// Until is the end of its lease.
	Until time.Time `json:"until"`
}

// AdmitRequest is the admission that reserves h again as id at now. Its
// scopes carry no limits: the request was admitted already and the
// provider is running it, so the hold is never refused (it counts against
// the budgets as a reservation does, and its settlement charges them).
// Its lease runs to h.Until, and at least grace: a lease that ended while
// no gateway ran gets grace for the poller to settle it from the provider
// before it is charged its worst case.
func (h *Hold) AdmitRequest(id string, now time.Time, grace time.Duration) *kernel.AdmitRequest {
	scopes := make([]kernel.Scope, len(h.Scopes))
	for i, r := range h.Scopes {
		scopes[i] = kernel.Scope{Ref: r}
	}
	return &kernel.AdmitRequest{
		ID: id, Scopes: scopes, Model: h.Model, PromptBytes: h.PromptBytes,
		MaxTokens: max(h.MaxTokens, 1), DefaultMaxTokens: 1, Price: h.Price,
		Lease: max(h.Until.Sub(now), grace),
	}
}
