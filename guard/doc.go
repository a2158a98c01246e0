// Package guard holds Tollgate's guardrails: checks that inspect, redact or
// refuse the text of prompts, replies and streamed output.
//
// It owns the built-in checks (pure Go, no network): PII (e-mail, phone,
// credit card with the Luhn check, IBAN with the mod-97 check, US SSN, IP
// address), secrets (provider API keys, AWS access keys, private-key blocks,
// JWTs, high-entropy tokens), blocked words and regular expressions, and a
// maximum input size; the external checks (a webhook with a JSON contract,
// and a moderation endpoint in OpenAI's /v1/moderations shape), each with a
// timeout and fail-open or fail-closed; the actions (block, redact with a
// typed placeholder such as [EMAIL], log); and Stream, the redactor of
// streamed output with a bounded hold-back window.
//
// Text is matched as it is on the wire: a JSON body is scanned in place, with
// everything outside string values and every escape sequence masked, so a
// redaction never breaks the JSON and the body is never decoded.
//
// A Set is what applies to one request (the processor resolves it from the
// key, team, org and model); Check runs it at one Stage. A Verdict names the
// guardrails applied and, per intervention, the kind and type matched — never
// the matched text.
//
// guard imports the standard library only (and kernel types where it needs
// them); it never imports extproc, translate or a store: the processor calls
// it through an interface it declares itself.
package guard
