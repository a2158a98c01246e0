// Package kernel is Tollgate's accounting core: money, prices and cost,
// budget periods and their windows, and State, which admits and settles
// requests against rate limits and budgets across the scope hierarchy.
//
// It owns the rules; the accountants (accounting/, whose Redis counters mirror these rules in Lua) and the
// gateway apply them. It imports the standard library only, does no I/O, no
// logging, and takes the time as an argument, so that every rule below is
// tested with generated operation sequences.
//
// # Money and cost
//
// Money is an integer number of nano-dollars. Prices are nano-dollars per
// million tokens. The cost of one request is
//
//	cost = ceil(Σ_k tokens_k × price_k / 1e6)
//
// over the token kinds (input, cached input, cache write, output, reasoning),
// rounded up once per request, computed with a 128-bit intermediate and
// saturating at the largest Money instead of wrapping. A zero cached-input or
// cache-write price is the input price; a zero reasoning price is the output
// price; negative prices and token counts count as zero.
//
// PriceNames and LookupPrice find a model's price under the names providers
// give it (Vertex "model@date", Bedrock inference profiles, "models/"
// prefixes).
//
// # Windows
//
// Period.Window(now) is the window [start, end) containing now. PeriodTotal is
// all time. Daily, weekly (from Monday) and monthly windows start at midnight in
// Period.Location (UTC when nil), so a day is 23 or 25 hours long across a
// daylight-saving change; where a change skips midnight the day starts at the
// change. A rolling window is Anchor + k·Every (a zero Anchor is the Unix epoch).
// Counters of a window reset exactly at its end, computed on access: there is
// no sweeper. Windows never go back: a `now` earlier than the current window's
// start counts in that window. Rate counters use UTC minutes the same way.
//
// # Admission
//
// A request names its scopes, key first (then its run when it names one, then
// user, team, org, global, then its tags that have a budget (ScopeTag,
// tags.go), then customer; scopes must be distinct). A scope with nil Limits is only counted.
// The budget mode (strict or estimate) and the shortfall policy (clamp or
// reject) of the whole request come from Scopes[0].Limits (nil: strict, clamp).
//
// Bounds. The input bound is PromptBytes tokens (every token covers at least one
// byte) at the dearest of the input, cached-input and cache-write prices; the
// output bound is MaxTokens, else DefaultMaxTokens, else 4096 tokens, at the
// dearer of the output and reasoning prices. worst(n) is the cost, rounded as
// above, of the input bound plus n output tokens.
//
// Budgets. Strict: every budget window of every scope must satisfy
// spent + reserved + worst(n) ≤ limit. With Clamp, n is lowered to the largest
// n ≥ 1 that fits every window (Decision.Clamped, Decision.MaxTokens = n); when
// even n = 1 does not fit a window, the request is refused. With Reject, any
// window that cannot hold worst(requested bound) refuses. A window's limit is
// taken literally: a limit of 0 refuses every request that may cost anything.
// Estimate: a window refuses when spent ≥ limit; nothing is reserved, and the
// last requests of a window may overshoot by their own cost.
//
// Soft windows (BudgetWindow.Soft), in either mode, never refuse nor clamp:
// they are skipped by the checks above, their counters are kept as for any
// window, and when the request is admitted every soft window whose spent is
// ≥ its limit is named in Decision.Warnings (scope order, then budget order).
//
// Tokens counted for tpm: strict, the input bound plus the output bound after
// clamping (the requested bound when the budget refuses); estimate,
// ceil(PromptBytes / 4).
//
// Unpriced models. A Price with Unpriced set (a model nobody priced and not
// declared free) refuses before anything else under a strict budget — the
// request's mode is Strict and some scope has a budget window —
// (ReasonUnpriced, Scope = the first scope with a budget window; see
// UnpricedRefusal): its cost cannot be bounded and would be a silent $0. In
// estimate mode, or when no scope has a budget, it is admitted and costs 0.
//
// Checks. A reservation id that is still open refuses first (ReasonDuplicate,
// Scope = Scopes[0]). Then for each scope in order, the checks in this order,
// the first failure deciding for the whole request:
//
//  1. ExpiresAt set and ≤ now: ReasonKeyExpired.
//  2. Models non-empty and without the request's model: ReasonModelNotAllowed.
//  3. MaxParallel > 0 and in-flight ≥ MaxParallel: ReasonParallelLimit, RetryAfter 1s.
//  4. RPM > 0 and requests admitted in the current UTC minute ≥ RPM:
//     ReasonRequestLimit, RetryAfter = end of the minute − now.
//  5. TPM > 0 and tokens of the current minute + this request's tokens > TPM:
//     ReasonTokenLimit, RetryAfter = end of the minute − now.
//  6. A budget window of this scope refuses (above): ReasonBudgetExceeded,
//     RetryAfter 0.
//
// A refusal changes no counter anywhere: admission is all or nothing. On
// success, on every scope: in-flight + 1, requests of the minute + 1, tokens of
// the minute + the request's tokens, and reserved + worst(n) in every window
// the scope tracks (0 in estimate mode). A scope tracks its PeriodTotal window
// always and the window of every period its budgets have named or Seed has
// given. Decision.Reserved is what was reserved, Decision.MaxTokens the output
// bound n. Decision.RateLimit describes, for requests and for tokens, the scope
// with such a limit that has the fewest remaining (after this request when
// admitted), with Reset = end of the minute − now.
//
// # Settlement
//
// Settle(now, id, usage, status) charges cost = Cost(price, usage) and, on
// every scope of the reservation: releases the reservation from each window it
// was reserved in, unless that window has reset since; adds the cost to the
// spent of every window the scope tracks, as current at now (so a request that
// crosses a window boundary is charged to the new window without having been
// reserved there); takes one from in-flight; and, when the admission minute is
// still current, replaces the tokens counted at admission by usage.Total().
// It is idempotent: settling an id that is not open returns ok=false and
// changes nothing.
//
// # Expiry
//
// A reservation lives for its lease (AdmitRequest.Lease, DefaultLease when
// zero) from admission. Expire(now) settles every reservation whose
// admittedAt + lease ≤ now with StatusExpired, zero usage and a cost equal to
// its worst case worst(n) — the amount reserved in strict mode — so an
// unsettled request is never charged less than it could have cost; its tpm
// count is left as it was and its parallel slots are freed.
//
// # Concurrency and memory
//
// State is safe for concurrent use. One mutex guards it: every request touches
// the global scope anyway, and a single lock keeps admission all-or-nothing
// without lock ordering. Admit+Settle costs about 0.6 µs of CPU and one
// allocation (the Settlement's scope list); see BenchmarkAdmitSettle. A scope's
// counters are kept once it has been seen (a few hundred bytes per scope) and
// dropped only when its Limits carry a TTL (run scopes): Expire forgets such a
// scope once nothing is in flight on it and its last admission or settlement
// is TTL or more before now; its next admission starts it afresh (the accountants seed it
// from the ledger). A reservation is dropped when settled or expired.
//
// # Seeding
//
// The ledger is the truth. At start-up, Seed(ref, period, windowStart, spent)
// sets the spent of the window containing windowStart from the ledger: it
// replaces spent of the tracked window when it is the same window (keeping its
// reservations), replaces the tracked window when the seeded one is newer, and
// is ignored when older.
package kernel
