package store

import (
	"context"
	"time"
)

// Session is one signed-in console session. The store keeps only the hash of
// the session token (the browser's cookie holds the token itself), so a copy
// of the database signs no one in; the principal is the admin credential the
// session acts as, looked up again on every call, so deleting the credential
// ends its sessions.
type Session struct {
	Hash      string // SHA-256 of the session token, hex
	AdminID   string // the admin credential (KindAdmin) the session acts as
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Sessions keeps console sessions, so that they survive a restart and work
// across admin replicas sharing a database. Every backend implements it; it is
// not part of Store so that narrow users (admin) depend on it alone.
type Sessions interface {
	// PutSession stores a new session (or replaces the one with that hash).
	PutSession(ctx context.Context, s Session) error
	// GetSession returns the session with that hash, unexpired at now;
	// ErrNotFound otherwise.
	GetSession(ctx context.Context, hash string, now time.Time) (Session, error)
	// DeleteSession removes the session with that hash; ErrNotFound when
	// there is none.
	DeleteSession(ctx context.Context, hash string) error
	// PurgeSessions removes the sessions expired at now and returns how many
	// it removed.
	PurgeSessions(ctx context.Context, now time.Time) (int64, error)
}
