// Package openai holds the wire types of OpenAI's HTTP APIs (chat
// completions, and the Responses API in responses.go) as the gateway's
// translators read and write them. It holds no logic: translators in translate/
// decide what to map; this package only names the shapes.
//
// Types whose name starts with Upstream are the gateway's side of a
// gateway → upstream exchange (what it writes to, or reads from, a provider);
// the others are what a client sends or receives.
//
// It imports the standard library only, and nothing of Tollgate.
package openai
