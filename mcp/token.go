package mcp

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// SessionTTL is how long a 2025-11-25 session token is valid after
// initialize; the client starts a new session after it (404).
const SessionTTL = 24 * time.Hour

// sessionToken is what a 2025-11-25 session's Mcp-Session-Id carries, sealed
// (AES-256-GCM: encrypted and authenticated) so that any replica serves the
// session's next request with nothing stored: the key it belongs to (a
// session stolen with another key is refused), the protocol version the
// client negotiated, when it ends, and an id for logs.
//
// It also carries the upstream sessions the gateway opened for this session
// at initialize (one per upstream server that keeps sessions), so that the
// replica that serves the next request resumes them (upstream.go) instead of
// starting new ones: an upstream server's per-session state survives a
// replica switch or a gateway restart.
type sessionToken struct {
	ID      string               `json:"i"`
	KeyID   string               `json:"k"`
	Version string               `json:"v"`
	Expires int64                `json:"e"` // Unix seconds
	Up      map[string]upSession `json:"u,omitempty"`
	// Agent is what the agent declared it can answer (sampling,
	// elicitation, roots: agentCapabilities), declared to the upstreams in
	// the sessions the gateway opens for it.
	Agent *sdk.ClientCapabilities `json:"a,omitempty"`
}

// agentCapabilities is the part of an initialize request's client
// capabilities that upstream servers act on: the requests they may send
// (sampling/createMessage, elicitation/create, roots/list), which the
// gateway relays to the agent during a call (stream.go). nil when there is
// none.
func agentCapabilities(c *sdk.ClientCapabilities) *sdk.ClientCapabilities {
	if c == nil || (c.Sampling == nil && c.Elicitation == nil && c.RootsV2 == nil) {
		return nil
	}
	out := &sdk.ClientCapabilities{Sampling: c.Sampling, Elicitation: c.Elicitation, RootsV2: c.RootsV2}
	if c.RootsV2 != nil {
		out.Roots.ListChanged = c.RootsV2.ListChanged // RootsV2 is not encoded: the token keeps Roots
	}
	return out
}

// upSession is one upstream server's session of a downstream session: what
// resuming it takes without a new initialize handshake.
type upSession struct {
	ID      string `json:"s"` // the upstream's Mcp-Session-Id
	Version string `json:"v"` // the protocol version negotiated with it
	Caps    caps   `json:"c,omitempty"`
}

// caps is the part of an upstream's capabilities the gateway relays.
type caps uint8

const (
	capTools caps = 1 << iota
	capResources
	capPrompts
	capCompletions
	capSubscribe // resources.subscribe (subscribe.go)
	capLogging   // logging (subscribe.go)
)

func capsOf(c *sdk.ServerCapabilities) caps {
	var out caps
	if c == nil {
		return out
	}
	if c.Tools != nil {
		out |= capTools
	}
	if c.Resources != nil {
		out |= capResources
		if c.Resources.Subscribe {
			out |= capSubscribe
		}
	}
	if c.Logging != nil {
		out |= capLogging
	}
	if c.Prompts != nil {
		out |= capPrompts
	}
	if c.Completions != nil {
		out |= capCompletions
	}
	return out
}

// capabilities is the inverse of capsOf.
func (c caps) capabilities() *sdk.ServerCapabilities {
	out := &sdk.ServerCapabilities{}
	if c&capTools != 0 {
		out.Tools = &sdk.ToolCapabilities{}
	}
	if c&capResources != 0 {
		out.Resources = &sdk.ResourceCapabilities{Subscribe: c&capSubscribe != 0}
	}
	if c&capLogging != 0 {
		out.Logging = &sdk.LoggingCapabilities{}
	}
	if c&capPrompts != 0 {
		out.Prompts = &sdk.PromptCapabilities{}
	}
	if c&capCompletions != 0 {
		out.Completions = &sdk.CompletionCapabilities{}
	}
	return out
}

// tokenPrefix marks the gateway's session ids (and their format version).
const tokenPrefix = "tgs1."

func newSessionToken(keyID, version string, now time.Time) sessionToken {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return sessionToken{ID: hex.EncodeToString(b[:]), KeyID: keyID, Version: version, Expires: now.Add(SessionTTL).Unix()}
}

func sealToken(s Sealer, t sessionToken) string {
	b, _ := json.Marshal(t) // a struct of strings and an int
	return tokenPrefix + base64.RawURLEncoding.EncodeToString(s.Seal(b))
}

// openToken opens a Mcp-Session-Id for keyID at now; ErrBadSession when it
// is not one of ours, belongs to another key or has expired.
func openToken(s Sealer, id, keyID string, now time.Time) (sessionToken, error) {
	var t sessionToken
	if len(id) <= len(tokenPrefix) || id[:len(tokenPrefix)] != tokenPrefix {
		return t, ErrBadSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(id[len(tokenPrefix):])
	if err != nil {
		return t, ErrBadSession
	}
	plain, err := s.Open(raw)
	if err != nil {
		return t, ErrBadSession
	}
	if err := json.Unmarshal(plain, &t); err != nil {
		return t, fmt.Errorf("%w: %w", ErrBadSession, err)
	}
	if t.KeyID != keyID || now.Unix() >= t.Expires {
		return t, ErrBadSession
	}
	return t, nil
}
