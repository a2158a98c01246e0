// Package batch is the settlement of deferred work: the providers' Batch APIs
// (OpenAI's Files + Batch APIs, Anthropic's Message Batches), whose lines run
// hours after they were admitted, at the batch price.
//
// It owns: the batch endpoints (service.go, files.go, jobs.go: an
// http.Handler for OpenAI's /v1/files and /v1/batches and Anthropic's
// /v1/messages/batches, which the data planes hand it: authentication of
// the virtual key, the file and batch ids mapped to their key in the store
// (owners.go), admission of a batch's worst case when it is created, the
// calls to the provider with its credential), the worst-case estimate of a
// batch for admission (estimate.go), the batch price (half of each token
// price), the pending-batch store (store.go: the store's "batch" objects,
// so pending batches survive restarts and are shared by replicas), the
// provider side of polling (provider.go: the batch's status and its
// output/error files or results), the parsing of per-line usage
// (results.go), and the poller (poller.go), which runs on one replica at a
// time (a lease in the store), settles each line of an ended batch into the
// ledger at the batch price with the batch id, and hands the reservation
// back to a Settler to release the rest. The same lease drives other
// deferred work given to the poller (WithWork: the background responses
// nobody polls), so one replica does all of it.
//
// It must not import the processor (extproc), the data planes, the admin API
// or a concrete store: gateway/ wires it (the key catalog, the routes of a
// model, the accountant) through the small interfaces declared here
// (Catalog, Admitter, Settler, Provider).
package batch
