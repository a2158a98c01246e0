package mockllm

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Google Cloud Vertex AI, as its REST reference documents it:
//
//   - POST /token is an OAuth2 token endpoint for service accounts (RFC 7523
//     JWT bearer grant, as a service-account key's token_uri): it issues
//     an access token "ya29.mock-N" for the assertion's issuer (the
//     service account's email), valid for an hour.
//   - POST /v1/projects/{p}/locations/{l}/publishers/google/models/{m}:{method}
//     serves the Gemini methods (gemini.go) and
//     POST …/publishers/anthropic/models/{m}:rawPredict and :streamRawPredict
//     the Messages API (anthropic.go) with Vertex's body: no "model" (it is
//     in the path) and anthropic_version "vertex-2023-10-16", required.
//
// Every Vertex request needs "Authorization: Bearer <token>" with a token
// this endpoint issued; anything else is 401 UNAUTHENTICATED. Usage is
// billed to the service account's email.

// vertexToken answers the JWT bearer grant.
func (s *Server) vertexToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		writeOAuthError(w, "unsupported_grant_type")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		writeOAuthError(w, "invalid_grant")
		return
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
	}
	if err != nil || json.Unmarshal(raw, &claims) != nil || claims.Iss == "" {
		writeOAuthError(w, "invalid_grant")
		return
	}
	tok := "ya29.mock-" + strconv.FormatUint(s.seq.Add(1), 10)
	s.tokens.Store(tok, claims.Iss)
	b, _ := json.Marshal(map[string]any{"access_token": tok, "expires_in": 3600, "token_type": "Bearer"})
	setJSON(w.Header(), len(b))
	_, _ = w.Write(b)
}

func writeOAuthError(w http.ResponseWriter, code string) {
	b := appendString([]byte(`{"error":`), code)
	b = append(b, '}')
	setJSON(w.Header(), len(b))
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(b)
}

// vertexAuth checks the bearer token and bills the request to its service
// account (the Authorization header is replaced by its email for the
// handlers' key reading). It reports false after answering 401.
func (s *Server) vertexAuth(w http.ResponseWriter, r *http.Request) bool {
	tok, _ := strings.CutPrefix(header(r.Header, "Authorization"), "Bearer ")
	email, ok := s.tokens.Load(tok)
	if !ok || tok == "" {
		writeError(w, flavorGemini, http.StatusUnauthorized,
			"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return false
	}
	r.Header["Authorization"] = []string{"Bearer " + email.(string)}
	r.Header.Del("X-Goog-Api-Key")
	return true
}

// vertexGoogle serves Gemini models.
func (s *Server) vertexGoogle(w http.ResponseWriter, r *http.Request) {
	if s.vertexAuth(w, r) {
		s.gemini(w, r)
	}
}

// vertexAnthropic serves Claude models: the body must carry
// anthropic_version vertex-2023-10-16 and no model; the model of the path
// is put in for the Messages handler.
func (s *Server) vertexAnthropic(w http.ResponseWriter, r *http.Request) {
	if !s.vertexAuth(w, r) {
		return
	}
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	if method != "rawPredict" && method != "streamRawPredict" {
		writeError(w, flavorGemini, http.StatusNotFound, "Method not found: "+method)
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var body map[string]json.RawMessage
	if err != nil || json.Unmarshal(raw, &body) != nil {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "invalid JSON body")
		return
	}
	if string(body["anthropic_version"]) != `"vertex-2023-10-16"` {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "anthropic_version: must be vertex-2023-10-16")
		return
	}
	if _, has := body["model"]; has {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "model: Extra inputs are not permitted (the model is in the URL)")
		return
	}
	if (method == "streamRawPredict") != (string(body["stream"]) == "true") {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "stream must be true on streamRawPredict, false on rawPredict")
		return
	}
	delete(body, "anthropic_version")
	body["model"], _ = json.Marshal(model)
	b, _ := json.Marshal(body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	s.anthropic(s.messages)(w, r)
}
