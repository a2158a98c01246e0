package ownership

import (
	"context"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate/responses"
)

// Owner is the owner of a native response (or conversation) id.
type Owner struct {
	ID         string
	KeyID      string
	Deployment string
	Model      string // the model group the client asked for
	Store      bool
	Background bool
	// Run is the run the response belongs to (issue 36): the run name of
	// the request that made it, else its own id (a chain's first
	// response); a request continuing it is in the same run. "" for a
	// conversation, or an id recorded before runs were.
	Run string
	// Pending: a background response whose settlement waits for the end of
	// its run.
	Pending bool
}

// Owners records and reads the owners of native response ids; R is the
// settlement record of the request that made one (the processor's). The
// owner of an id made by a settled request travels with its settlement
// (written with the ledger row); Owners writes the others.
type Owners[R any] interface {
	// ResponseOwner returns the owner of an id; ErrNotFound when the id is
	// unknown or expired.
	ResponseOwner(ctx context.Context, id string) (*Owner, error)
	// ForgetResponse forgets an id its upstream deleted.
	ForgetResponse(ctx context.Context, id string) error
	// PutOwner records o at once, outside the ledger (a conversation, or a
	// background response), with pending, when not nil, the settlement of
	// its request, to be claimed when the response finishes.
	PutOwner(ctx context.Context, o *Owner, pending *Deferred[R]) error
	// ClaimSettlement takes the deferred settlement of id: exactly one claim
	// gets it; the others, and any id without one, ErrNotFound.
	ClaimSettlement(ctx context.Context, id string) (*Deferred[R], error)
}

// Awaiter is implemented by Owners whose records another replica writes
// with its group commit, a few milliseconds after its reply:
// AwaitResponseOwner reads an id that was not found again, over the
// replicas' commit window, before it too says ErrNotFound.
type Awaiter interface {
	AwaitResponseOwner(ctx context.Context, id string) (*Owner, error)
}

// ErrNotFound: an unknown, expired or forgotten id, or no settlement left
// to claim. It is the stored responses' own (one "not found" for the
// processor, whichever store answers).
var ErrNotFound = responses.ErrNotFound

// DefaultBackgroundLease is the lease of a background response's
// reservation when the processor is not given one: how long its settlement
// may wait for the response to finish.
const DefaultBackgroundLease = time.Hour

// Unfinished reports whether a response object's status says it is still to
// run.
func Unfinished(status string) bool { return status == "queued" || status == "in_progress" }

// SettleStatus is how a finished response's status settles: completed and
// incomplete responses are charged as completed, failed ones as failed, a
// cancelled one as aborted (what ran). ok is false for a response still
// running, or a status that is not a response's.
func SettleStatus(status string) (st kernel.Status, ok bool) {
	switch status {
	case "completed", "incomplete":
		return kernel.StatusCompleted, true
	case "failed":
		return kernel.StatusFailed, true
	case "cancelled":
		return kernel.StatusAborted, true
	}
	return 0, false
}
