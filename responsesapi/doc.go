// Package responsesapi is what the processor does for OpenAI's Responses
// and Conversations APIs beyond translating them, one request at a time:
// the stored responses of translated providers (stored.go: previous_response_id's
// history loaded before admission, GET/DELETE /v1/responses/{id} served);
// native response and conversation ids (owner.go, conversations.go:
// pinning a request to the deployment holding its id, forwarding reads and
// deletes there, 404 for another key's id, reading the id a reply hands
// out); and background responses (background.go: the reservation's lease,
// the settlement deferred until a poll or the gateway's poller sees the
// response finished, claimed once).
//
// It owns the per-request State and the Service (the processor's, set once:
// owners, store, router, clock, settlement hooks). The processor calls it
// through Service's methods and lends it a Stream (names, catalog,
// routing, its settlement record); everything about the ext_proc protocol
// (header and body mutations, immediate replies) stays in extproc, which
// turns the Forward and *translate.APIError values returned here into
// messages.
//
// It must not import the processor (extproc), the data planes, the gateway,
// the admin API or a store: it is below extproc, which imports it. Imports:
// the standard library, kernel, ownership, routing, translate and
// translate/responses.
package responsesapi
