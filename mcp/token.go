package mcp

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
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
// Upstream sessions are not in it: the gateway keeps one upstream session
// per server and replica (upstream.go), shared by the downstream sessions it
// serves, which the SDK's client cannot hand from one replica to another.
type sessionToken struct {
	ID      string `json:"i"`
	KeyID   string `json:"k"`
	Version string `json:"v"`
	Expires int64  `json:"e"` // Unix seconds
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
