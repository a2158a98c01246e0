// Package ownership is the gateway's record of the Responses API objects a
// native provider keeps (issue 37): which virtual key owns each response or
// conversation id the gateway handed out, which deployment holds it, and —
// for a background response — the settlement deferred until it finishes.
//
// It owns: the owner of an id (Owner) and the contract of the store that
// keeps owners and their pending settlements (Owners, generic in the
// settlement record so that the processor keeps its own type); the reading
// of a Responses request's ownership members (ScanRequest: store,
// background, previous_response_id, conversation); the paths forwarded to
// the deployment holding an id (ResponsePath, ConversationPath); the id of a
// response read from a stream's response.created event (CreatedID); when a
// background response is finished and how it settles (Unfinished,
// SettleStatus, DefaultBackgroundLease); and the client errors of an id not
// found or a holder that cannot serve (OpenAI's shapes).
//
// The processor's Responses work (responsesapi/: owner.go, conversations.go,
// background.go) keeps only what runs inside one request: pinning
// it to the holder, forwarding, observing the id, deferring and claiming the
// settlement.
//
// It must not import the processor (extproc), the data planes, routing, the
// admin API or a concrete store: it is below extproc, which imports it, and
// its store contract is implemented by gateway/ over store/. Imports: the
// standard library, kernel and translate (the JSON scan, the client error
// type).
package ownership
