package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	adminv1 "github.com/tollgate-ai/tollgate/proto/tollgate/admin/v1"
	"github.com/tollgate-ai/tollgate/store"
)

// The web console: static pages under /ui/ (embedded, no build step) that call
// the REST API. Signing in with an admin key creates a session: the key stays
// on the server, the browser holds an HttpOnly, SameSite=Strict cookie naming
// the session, and every REST call made with that cookie must also carry the
// session's CSRF token in the X-CSRF-Token header (a page of another origin can
// neither read the token nor, with SameSite=Strict, send the cookie). The REST
// call then runs with the session's admin key, so the console has exactly the
// key's role: a viewer sees the pages and is refused every change. Sessions
// live in the store (sessions.go), so they survive a restart and are valid on
// every admin replica sharing the database.

//go:embed ui
var uiFiles embed.FS

const (
	// ConsolePath is where the admin port serves the console.
	ConsolePath = "/ui/"
	// sessionCookie names the console session.
	sessionCookie = "tollgate_session"
	// csrfHeader carries the session's CSRF token on every REST call made with the cookie.
	csrfHeader = "X-CSRF-Token"
	// SessionTTL is how long a console session lasts after sign-in.
	SessionTTL = 8 * time.Hour
)

// console serves the pages, the session endpoints and the cookie side of the REST API.
type console struct {
	sessions *sessions
	creds    adminv1.AdminCredentialServiceClient
}

func newConsole(conn *grpc.ClientConn, st store.Sessions, now func() time.Time) *console {
	return &console{
		sessions: &sessions{st: st, now: now},
		creds:    adminv1.NewAdminCredentialServiceClient(conn),
	}
}

// register mounts the console on mux.
func (c *console) register(mux *http.ServeMux) {
	static, _ := fs.Sub(uiFiles, "ui") // the embedded directory exists
	files := http.StripPrefix(ConsolePath, http.FileServerFS(static))
	mux.Handle("GET "+ConsolePath, securityHeaders(withETags(static, files)))
	mux.Handle("GET /{$}", http.RedirectHandler(ConsolePath, http.StatusFound))
	mux.HandleFunc("GET "+ConsolePath+"api/session", c.current)
	mux.HandleFunc("POST "+ConsolePath+"api/session", c.signIn)
	mux.HandleFunc("DELETE "+ConsolePath+"api/session", c.signOut)
}

// withETags sets each embedded file's ETag (its SHA-256) so that a browser
// revalidates instead of downloading again (embedded files have no
// modification time); http.FileServer answers If-None-Match with 304.
func withETags(static fs.FS, h http.Handler) http.Handler {
	tags := map[string]string{}
	_ = fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		tags[p] = `"` + hex.EncodeToString(sum[:12]) + `"`
		return nil
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, ConsolePath)
		if p == "" {
			p = "index.html"
		}
		if tag, ok := tags[p]; ok {
			w.Header().Set("ETag", tag)
			w.Header().Set("Cache-Control", "no-cache")
		}
		h.ServeHTTP(w, r)
	})
}

// securityHeaders keeps the pages out of frames and limits what they load to
// the admin port itself.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy",
			"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// sessionInfo is what the browser learns about its session: never the key.
type sessionInfo struct {
	CSRF       string          `json:"csrf"`
	Expires    time.Time       `json:"expires"`
	Credential json.RawMessage `json:"credential"`
}

// whoami asks the admin API who a key (or a session token) is, as any client
// would: the credential's id and its JSON for the page.
func (c *console) whoami(ctx context.Context, bearer string) (string, json.RawMessage, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+bearer)
	resp, err := c.creds.WhoAmI(ctx, &adminv1.WhoAmIRequest{})
	if err != nil {
		return "", nil, err
	}
	raw, err := protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(resp.GetCredential())
	return resp.GetCredential().GetId(), raw, err
}

func (c *console) signIn(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeError(w, http.StatusUnsupportedMediaType, "send the admin key as JSON: {\"key\": \"tga-…\"}")
		return
	}
	var in struct {
		Key string `json:"key"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&in); err != nil || in.Key == "" {
		writeError(w, http.StatusBadRequest, "send the admin key as JSON: {\"key\": \"tga-…\"}")
		return
	}
	if strings.HasPrefix(strings.TrimSpace(in.Key), SessionTokenPrefix) {
		writeError(w, http.StatusUnauthorized, "sign in with an admin key (tga-…), not a session token")
		return
	}
	adminID, cred, err := c.whoami(r.Context(), strings.TrimSpace(in.Key))
	if err != nil {
		writeError(w, http.StatusUnauthorized, status.Convert(err).Message())
		return
	}
	ses, err := c.sessions.create(r.Context(), adminID)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "could not store the session: "+err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: ses.token, Path: "/", Expires: ses.expires, MaxAge: int(SessionTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	writeJSON(w, sessionInfo{CSRF: ses.csrf(), Expires: ses.expires, Credential: cred})
}

func (c *console) current(w http.ResponseWriter, r *http.Request) {
	ses, ok := c.sessions.get(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "not signed in")
		return
	}
	_, cred, err := c.whoami(r.Context(), ses.token)
	if err != nil { // the credential was deleted since sign-in
		writeError(w, http.StatusUnauthorized, status.Convert(err).Message())
		return
	}
	writeJSON(w, sessionInfo{CSRF: ses.csrf(), Expires: ses.expires, Credential: cred})
}

func (c *console) signOut(w http.ResponseWriter, r *http.Request) {
	ses, ok := c.sessions.get(r)
	if ok && validCSRF(r, ses) {
		c.sessions.remove(r.Context(), ses)
	}
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	w.WriteHeader(http.StatusNoContent)
}

func validCSRF(r *http.Request, ses session) bool {
	return subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(ses.csrf())) == 1
}

// withSession lets the REST API be called with the console's cookie: a request
// without an Authorization header but with a live session cookie runs with the
// session's token as its bearer credential (the gRPC server looks the session
// up in the store), provided it carries the session's CSRF token.
func (c *console) withSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			next.ServeHTTP(w, r)
			return
		}
		ses, ok := c.sessions.get(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		if !validCSRF(r, ses) {
			writeError(w, http.StatusForbidden, "missing or wrong "+csrfHeader+" header (the console sends it; sign in again)")
			return
		}
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+ses.token)
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers like the REST API does: {"code": <gRPC code>, "message"}.
func writeError(w http.ResponseWriter, httpStatus int, msg string) {
	code := codes.Unauthenticated
	switch httpStatus {
	case http.StatusForbidden:
		code = codes.PermissionDenied
	case http.StatusBadRequest, http.StatusUnsupportedMediaType:
		code = codes.InvalidArgument
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg, "details": []any{}})
}
