// Package responses keeps the stored responses of OpenAI's Responses API for
// translated providers: Store is the interface the gateway adapts the store's
// responses to (with their retention), History turns a stored response into
// the input items previous_response_id prepends, Save and SaveFunc store a
// finished one, and Serve answers GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items. A stored response is visible only to
// the key that made it.
//
// Imports: translate (error shapes), schema/openai. Never the processor,
// which calls it before admission and when the response is done.
package responses
