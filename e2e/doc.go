// Package e2e runs Tollgate as a user does — `tollgate run` and `mockllm` as
// processes, keys and models made with the CLI — and drives it with the official
// SDKs: the OpenAI Node SDK (npm `openai`, pinned by package-lock.json) and the
// Go `openai-go`. It holds tests only and imports nothing of Tollgate but the
// test helpers.
package e2e
