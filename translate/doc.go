// Package translate turns one client API into one provider's API and back:
// the request, the complete response, the stream chunk by chunk, the usage
// and the error.
//
// There is one Translator per client-API × provider pair, each in a file
// named <client API>_<provider>.go (chat_openai.go, chat_anthropic.go,
// messages_bedrock.go, generate_gemini.go, ...), with what the pairs of one
// provider share in <provider>_common.go. The pairs are one explicit table,
// translators.go (a map literal, no init registration): a pair not listed is
// unsupported and the processor answers 400. Every row has golden cases in
// testdata (TestTranslatorTableGolden); docs/internals.md says how to add a
// provider.
//
// Besides the translators it owns what reading and rewriting a client's body
// needs: the one-pass JSON scan (scan.go) that finds the members the gateway
// reads (request.go: ParseRequestInto, Inbound) and edits them in place, the
// SSE parser and editor (sse.go, sse_edit.go), the usage readers
// (usage_openai.go), the client error shapes (errors.go: APIError, OpenAI's,
// Anthropic's and Google's bodies, upstream errors with secrets redacted) and
// the reply's model renaming (reply_model.go). The common translators come
// from pools (translator_pool.go; FreeTranslator gives one back).
//
// Sub-packages: responses keeps the Responses API's stored responses behind
// a Store interface; translatetest holds fixtures for tests only.
//
// Imports: schema/<api> (the only package that does), kernel (Usage, Price),
// upstream (Target). Never the processor (extproc/) nor routing/: the
// processor calls translators, not the other way round.
package translate
