package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// errBadResponse is wrapped by every check failure: a response that arrived
// whole but is not the success the scenario expects.
var errBadResponse = errors.New("bad response")

// scenario is one kind of request and the check of its response.
type scenario struct {
	path  string
	body  []byte
	check func(response) error
}

// scenarioFor returns the scenario name with model; ok is false for an
// unknown name.
func scenarioFor(name, model string) (scenario, bool) {
	switch name {
	case "chat":
		return scenario{
			path:  "/v1/chat/completions",
			body:  []byte(`{"model":"` + model + `","messages":[{"role":"user","content":"Say hello to the benchmark"}],"max_tokens":16}`),
			check: checkJSON,
		}, true
	case "chat-parts":
		// chat's prompt as content parts: the same text, another body (a
		// semantic cache's hit for a prompt stored as chat's; bench/run.sh
		// CACHE=semantic).
		return scenario{
			path:  "/v1/chat/completions",
			body:  []byte(`{"model":"` + model + `","messages":[{"role":"user","content":[{"type":"text","text":"Say hello to the benchmark"}]}],"max_tokens":16}`),
			check: checkJSON,
		}, true
	case "stream":
		return scenario{
			path:  "/v1/chat/completions",
			body:  []byte(`{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"Say hello to the benchmark"}],"max_tokens":16}`),
			check: checkSSE,
		}, true
	case "embeddings":
		return scenario{
			path:  "/v1/embeddings",
			body:  []byte(`{"model":"` + model + `","input":"embed this sentence for the benchmark"}`),
			check: checkJSON,
		}, true
	}
	return scenario{}, false
}

// shortPrompts are the scenarios' prompt and input, as withPrompt replaces them.
var shortPrompts = [][]byte{[]byte(`"Say hello to the benchmark"`), []byte(`"embed this sentence for the benchmark"`)}

// withPrompt returns body with its short prompt (or input) replaced by n
// bytes of prose: sentences with numbers, dates, versions and a URL — what
// a prompt carries — but no personal data or secret, so a guardrail finds
// nothing and the request goes through as it is.
func withPrompt(body []byte, n int) []byte {
	const para = "The gateway forwards each request to the provider chosen by its routing strategy, " +
		"records the usage it reports, and settles the cost against every budget in the hierarchy. " +
		"Release 2.14.3 shipped on 2026-03-18 with 47 fixes; see https://example.com/notes for the list. " +
		"It served 12,500 requests per second at a p99 of 9.6 ms on 2 cores, up 18% from the last run. "
	text := make([]byte, 0, n+len(para))
	for len(text) < n {
		text = append(text, para...)
	}
	q, _ := json.Marshal(string(text[:n]))
	for _, p := range shortPrompts {
		if i := bytes.Index(body, p); i >= 0 {
			return append(append(append([]byte(nil), body[:i]...), q...), body[i+len(p):]...)
		}
	}
	return body
}

// uniqueDigits is the width of a -unique request's number (hexadecimal).
const uniqueDigits = 16

// withUnique returns body with room for a number at the end of its prompt
// (or input) — " #" and uniqueDigits zeros before the string's closing
// quote — and where the digits start: each request writes its own number
// there (target.numbered), so that no two requests share a cache key while
// every body keeps one length.
func withUnique(body []byte) ([]byte, int, error) {
	for _, field := range []string{`"content":"`, `"text":"`, `"input":"`} {
		i := bytes.Index(body, []byte(field))
		if i < 0 {
			continue
		}
		j := i + len(field)
		for j < len(body) && body[j] != '"' {
			if body[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(body) {
			break
		}
		mark := " #" + strings.Repeat("0", uniqueDigits)
		out := make([]byte, 0, len(body)+len(mark))
		out = append(append(append(out, body[:j]...), mark...), body[j:]...)
		return out, j + 2, nil
	}
	return nil, -1, errors.New("-unique: the scenario's body has no prompt to number")
}

func checkStatus(r response, ctype string) error {
	if r.status != 200 {
		return fmt.Errorf("%w: status %d: %q", errBadResponse, r.status, clip(r.body))
	}
	if !bytes.Contains(r.ctype, []byte(ctype)) {
		return fmt.Errorf("%w: content-type %q", errBadResponse, clip(r.ctype))
	}
	return nil
}

// checkJSON accepts a 200 JSON object that reports usage.
func checkJSON(r response) error {
	if err := checkStatus(r, "json"); err != nil {
		return err
	}
	if len(r.body) == 0 || r.body[0] != '{' || !json.Valid(r.body) {
		return fmt.Errorf("%w: not a JSON object: %q", errBadResponse, clip(r.body))
	}
	if !bytes.Contains(r.body, []byte(`"usage":`)) {
		return fmt.Errorf("%w: no usage: %q", errBadResponse, clip(r.body))
	}
	return nil
}

// checkSSE accepts a 200 event stream of JSON data events ended by
// "data: [DONE]".
func checkSSE(r response) error {
	if err := checkStatus(r, "text/event-stream"); err != nil {
		return err
	}
	events, done := 0, false
	for b := r.body; len(b) > 0; {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // blank lines, event:, id:, comments
		}
		data = bytes.TrimPrefix(data, []byte{' '})
		switch {
		case done:
			return fmt.Errorf("%w: data after [DONE]: %q", errBadResponse, clip(data))
		case string(data) == "[DONE]":
			done = true
		case len(data) < 2 || data[0] != '{' || data[len(data)-1] != '}':
			return fmt.Errorf("%w: event data is not a JSON object: %q", errBadResponse, clip(data))
		default:
			events++
		}
	}
	if !done || events == 0 {
		return fmt.Errorf("%w: stream of %d events without data: [DONE]", errBadResponse, events)
	}
	return nil
}
