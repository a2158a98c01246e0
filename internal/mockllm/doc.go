// Package mockllm is a deterministic mock of the LLM provider APIs Tollgate
// fronts: OpenAI (chat completions, completions, embeddings, models), Azure
// OpenAI (the same under /openai/deployments/{d}/…), OpenAI's Responses API
// (POST /v1/responses, and Azure's /openai/v1/responses; JSON and SSE, see
// responses.go; function_call_output strings and instructions count as prompt
// text), the Anthropic Messages
// API (JSON and SSE, count_tokens), Google's Gemini API (generateContent,
// streamGenerateContent as SSE or a JSON array, countTokens, embeddings,
// models; gemini.go documents its rules) and the Amazon Bedrock runtime
// (Converse, ConverseStream as AWS event-stream frames, InvokeModel
// embeddings; every SigV4 signature verified; bedrock.go), and OpenAI's
// moderation endpoint (POST /v1/moderations, flagging Config.FlaggedWords;
// moderation.go). It serves tests, demos and benchmarks, and
// keeps its own bill (GET /stats) so Tollgate's ledger can be reconciled
// against what the "provider" actually delivered.
//
// # Determinism
//
// Everything a test needs to predict is a documented function of the request:
//
//   - Prompt text is the concatenation, without separators, of every text the
//     request carries: chat message contents (a string, or the "text" of each
//     text part), the Anthropic "system" (string or text blocks), a completions
//     prompt (string or list of strings).
//   - Input tokens = ceil(len(prompt text in bytes) / 4). For embeddings each
//     input is counted on its own and summed; token-array inputs count one token
//     per element.
//   - Output tokens = min(max_tokens, default) where max_tokens is the
//     request's max_tokens (or max_completion_tokens) when set, and default is
//     x-mock-output-tokens when given, else Config.OutputTokens.
//   - The reply is made of that many words, one word per token, joined by single
//     spaces: word i is word (i mod n) of the last message's text split on white
//     space (n words), or "mock" when that text has no words.
//   - A stream carries the words in Config.Chunks content chunks (or one chunk
//     per word when Chunks is 0 or larger than the word count); chunk i holds
//     words [i·N/C, (i+1)·N/C), and every chunk but the first starts with a space,
//     so the concatenated deltas equal the JSON reply text.
//   - Anthropic prompt caching: the cacheable prefix is the prompt text up to and
//     including the last block that has cache_control (the whole prompt when the
//     request has a top-level cache_control). Its tokens, ceil(prefix bytes / 4),
//     are reported as cache_creation_input_tokens the first time that prefix is
//     seen for that API key and as cache_read_input_tokens afterwards;
//     input_tokens is the rest (total − prefix tokens). The seen-prefix set is
//     cleared by POST /stats/reset. There is no minimum cacheable length.
//   - OpenAI cached tokens: x-mock-cached-tokens: N reports min(N, prompt
//     tokens) as usage.prompt_tokens_details.cached_tokens (prompt_tokens still
//     includes them, as OpenAI does).
//
// # Per-request overrides (request headers)
//
//   - x-mock-status: 429 — reply with that status and a provider-shaped error
//     body (OpenAI/Azure or Anthropic, by endpoint); 429 carries retry-after: 1.
//   - x-mock-disconnect-after: N — streams: close the connection after N SSE
//     events (every "data:" event counts, role and usage chunks included);
//     non-streaming replies: close the connection before any response byte.
//   - x-mock-latency: 250ms — delay before the first response byte.
//   - x-mock-chunk-delay: 10ms — delay before each content chunk but the first.
//   - x-mock-output-tokens: N — the default output tokens of this request.
//   - x-mock-cached-tokens: N — see above.
//   - x-mock-reply-model: NAME — chat and completions, Messages and Gemini's
//     generateContent: the reply names (and the bill counts) model NAME
//     rather than the request's, as a provider resolving an alias to a dated
//     model does.
//   - x-mock-tool-call: NAME — chat completions and Messages: when the request
//     defines a tool of that name (tools[].function.name, Anthropic
//     tools[].name), reply with ONE call to it instead of text, whose
//     arguments (OpenAI, a JSON string) or input (Anthropic) are
//     {"city":"<w>"}, w being the last white-space separated word of the last
//     user message's text ("mock" when it has none). OpenAI: message content
//     null, tool_calls [{id "call_mock_1", type "function", function {name,
//     arguments}}], finish_reason "tool_calls"; streamed as the role chunk, a
//     tool_calls delta with index 0, id, type, name and arguments "", then the
//     arguments in two pieces (first len/2 bytes, then the rest), then the
//     finish chunk. Anthropic: one tool_use block with id "toolu_mock_1",
//     stop_reason "tool_use"; streamed as content_block_start (input {}), two
//     input_json_delta pieces (split as above), content_block_stop. Output
//     tokens = ceil(len(arguments JSON in bytes) / 4), max_tokens ignored;
//     streamed, the first piece carries half of them (rounded down) and the
//     second the rest, as delivered output in /stats. Without such a tool the
//     header is ignored.
//
// # Faults per deployment (faults.go)
//
// One mock stands for several deployments: a request under /d/NAME/ (e.g. a
// provider base URL http://127.0.0.1:9090/d/a/v1) is served as the path
// without the prefix by deployment NAME; x-mock-deployment: NAME names it
// too. Each deployment counts what it received, faulty or not, and can be
// made to fail, through the control endpoint (PUT /faults/NAME with
// {"mode":…, "retry_after":s, "times":n}; DELETE /faults/NAME; GET /faults
// lists the counts; DELETE /faults clears everything) or per request with
// x-mock-fault: MODE (and x-mock-retry-after: s). Modes: "500"; "429" with
// retry-after (default 1); "hang" (no reply until the client goes away);
// "reset" (streams: the connection closes after the first event; JSON: before
// any byte); "refuse" (the connection is reset before any byte — a closed
// port is the real refusal); "context_window" and "content_policy" (400 in
// the provider's shape: OpenAI code context_length_exceeded /
// content_policy_violation, Anthropic invalid_request_error "prompt is too
// long" / "Output blocked by content filtering policy"); "slow" (a normal
// reply after delay_ms, as x-mock-latency); "401_empty" and "403_empty" (that
// status with no body and no content-type). A fault with times
// n clears itself after n requests.
//
// # The bill (GET /stats, POST /stats/reset)
//
// Usage is recorded per API key (Authorization: Bearer, else api-key, else
// x-api-key, else x-goog-api-key or ?key=; "" when none) and only for what was delivered:
//
//   - requests counts billable replies (chat, completions, embeddings,
//     messages) whose 2xx headers were written; errors counts injected error
//     replies; aborted counts streams that ended early (x-mock-disconnect-after,
//     or a client that went away). Models, count_tokens and stats are free.
//   - input_tokens (uncached), cached_tokens (cache reads) and
//     cache_creation_tokens are counted once the 2xx headers are written.
//   - output_tokens counts the words of the content chunks actually written and
//     flushed (for JSON replies: all of them once the body is written).
//
// # The providers' reports (reports.go)
//
// The bill is also kept per UTC day × model × API key and served as OpenAI's
// organization Usage and Costs APIs and Anthropic's Usage & Cost Admin API,
// behind Config.AdminKey, priced with Config.Prices, so that a reconciliation
// of Tollgate's ledger against "the provider's invoice" can be tested: a
// request sent straight to the mock shows up in the report and not in the
// ledger.
//
// # Files and batches (batches.go)
//
// OpenAI's Files and Batch APIs and Anthropic's Message Batches API, owned by
// the API key that created them, with a controllable completion time
// (Config.BatchDelay, x-mock-batch-delay: line i of n completes at
// delay×(i+1)/n) and each line served as the same request alone would be
// (deterministic per-line usage), billed at half price as batch usage.
//
// The package must not import anything from Tollgate: it stands in for an
// external provider (it uses the providers' own SDK pieces where the wire is
// framing- or security-critical: aws-sdk-go-v2's event-stream encoder and
// SigV4 signer).
package mockllm
