package admin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tollgate-ai/tollgate/internal/secret"
	"github.com/tollgate-ai/tollgate/store"
)

// SessionTokenPrefix starts every console session token (the cookie's value).
const SessionTokenPrefix = "tgs-"

// session is one signed-in browser: its token (from the cookie, never stored:
// the store keeps its hash) and expiry.
type session struct {
	token   string
	expires time.Time
}

// csrf is the session's CSRF token, derived from the session token, so no
// replica has to store it: a page of another origin can read neither.
func (s session) csrf() string {
	sum := sha256.Sum256([]byte("tollgate-console-csrf\x00" + s.token))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// sessions keeps the console sessions in the store (store.Sessions): the hash
// of the token, the admin credential it acts as and the expiry.
type sessions struct {
	st  store.Sessions
	now func() time.Time
}

func (s *sessions) create(ctx context.Context, adminID string) (session, error) {
	now := s.now()
	// Expired sessions are removed at each sign-in; the expiry index makes it cheap.
	if _, err := s.st.PurgeSessions(ctx, now); err != nil {
		return session{}, err
	}
	ses := session{token: SessionTokenPrefix + randomToken(), expires: now.Add(SessionTTL)}
	err := s.st.PutSession(ctx, store.Session{Hash: secret.Hash(ses.token), AdminID: adminID, CreatedAt: now.UTC(), ExpiresAt: ses.expires.UTC()})
	return ses, err
}

// get returns the live session of the request's cookie.
func (s *sessions) get(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || !strings.HasPrefix(c.Value, SessionTokenPrefix) {
		return session{}, false
	}
	got, err := s.st.GetSession(r.Context(), secret.Hash(c.Value), s.now())
	if err != nil {
		return session{}, false
	}
	return session{token: c.Value, expires: got.ExpiresAt}, true
}

func (s *sessions) remove(ctx context.Context, ses session) {
	_ = s.st.DeleteSession(ctx, secret.Hash(ses.token)) // already gone is fine
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// lookupSession authenticates a console session token: the session must be
// live in the store and its admin credential must still exist.
func (s *Server) lookupSession(ctx context.Context, tok string) (principal, error) {
	unknown := status.Error(codes.Unauthenticated, "unknown or expired console session: sign in again")
	if s.sessions == nil {
		return principal{}, unknown
	}
	ses, err := s.sessions.GetSession(ctx, secret.Hash(tok), s.now())
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, unknown
	}
	if err != nil {
		return principal{}, s.toStatus(ctx, err)
	}
	a, _, err := store.Get[store.Admin](ctx, s.st, ses.AdminID)
	if errors.Is(err, store.ErrNotFound) {
		return principal{}, unknown
	}
	if err != nil {
		return principal{}, s.toStatus(ctx, err)
	}
	return principal{ID: a.ID, Role: a.Role, TeamID: a.TeamID}, nil
}
