// Package reconcile checks Tollgate's ledger against what a provider says it
// billed: it fetches the provider's own usage and cost reports (OpenAI's
// organization Usage and Costs APIs, Anthropic's Usage & Cost Admin API),
// compares them with the ledger rows of the provider's deployments per UTC
// day × provider model, and reports the drift of tokens, requests and cost,
// in absolute and relative terms, with the ledger rows behind each cell. Job
// runs it on a schedule and reports each run to an Observer.
//
// It owns the providers' report clients (openai.go, anthropic.go), the
// comparison (compare.go) and the schedule (job.go). It reads the ledger and
// the configuration only through the narrow interfaces it declares, and must
// not import the processor (extproc), the admin API, the data planes or a
// concrete store: gateway/ and admin/ wire it.
package reconcile
