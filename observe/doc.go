// Package observe is where Tollgate reports what it does: Prometheus metrics
// (GenAI semantic conventions mapped to Prometheus, and Tollgate's own), the
// access log (one line per request), OpenTelemetry traces (OTLP, off unless
// OTEL_* says otherwise) and the /healthz and /readyz handlers.
//
// The processor reports through the interfaces extproc declares (Observer,
// Tracer, Accountant): Observe builds every signal from one extproc.Report
// when a request's stream ends, and the accountant is wrapped (Accountant)
// to count reservations and refusals. The router reports the cooldowns it
// starts (extproc.CooldownObserver), and its deployments' state is read at
// each scrape (WatchRouter). Nothing here changes a request.
//
// observe may import kernel, extproc (for the types of its interfaces),
// prometheus/client_golang and go.opentelemetry.io; it must not import
// store, admin, xds, edge or gateway: gateway wires it and reads the stores'
// statistics for it (LedgerStats, Checks).
package observe
