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
//     in the path) and anthropic_version "vertex-2023-10-16", required;
//     POST …/publishers/anthropic/models/count-tokens:rawPredict counts a
//     Messages request's input tokens (the model in the body, the version
//     required) and :predict embeds text with Google's embedding models.
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

// vertexGoogle serves Gemini models: the Gemini methods Vertex has
// (generateContent, streamGenerateContent, countTokens) and :predict for
// embeddings; the Gemini API's embedContent and batchEmbedContents are not
// Vertex's.
func (s *Server) vertexGoogle(w http.ResponseWriter, r *http.Request) {
	if !s.vertexAuth(w, r) {
		return
	}
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	switch method {
	case "predict":
		if strings.HasPrefix(model, "imagen") { // units.go
			s.serve(w, r, flavorGemini, model, s.imagenPredict)
			return
		}
		s.serve(w, r, flavorGemini, model, s.vertexPredict)
	case "embedContent", "batchEmbedContents":
		writeError(w, flavorGemini, http.StatusNotFound, "Method not found: "+method)
	default:
		s.gemini(w, r)
	}
}

// vertexPredict answers :predict of a text embedding model: one prediction
// per instance, each with its statistics (token_count, truncated), and the
// billable characters in metadata.
func (s *Server) vertexPredict(c *call) {
	var req struct {
		Instances []struct {
			Content  string `json:"content"`
			TaskType string `json:"task_type"`
			Title    string `json:"title"`
		} `json:"instances"`
		Parameters struct {
			OutputDimensionality int   `json:"outputDimensionality"`
			AutoTruncate         *bool `json:"autoTruncate"`
		} `json:"parameters"`
	}
	if !c.decode(&req) {
		return
	}
	if len(req.Instances) == 0 {
		writeError(c.w, c.flavor, http.StatusBadRequest, "instances: at least one instance is required")
		return
	}
	dims := s.cfg.EmbeddingDimensions
	if req.Parameters.OutputDimensionality > 0 {
		dims = req.Parameters.OutputDimensionality
	}
	var total, chars int64
	b := []byte(`{"predictions":[`)
	for i, in := range req.Instances {
		n := tokensOf(len(in.Content))
		total += n
		chars += int64(len(strings.ReplaceAll(in.Content, " ", "")))
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"embeddings":{"statistics":{"truncated":false,"token_count":`...)
		b = appendInt(b, n)
		b = append(b, `},"values":[`...)
		for j, f := range embedding([]byte(in.Content), dims) {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
		}
		b = append(b, `]}}`...)
	}
	b = append(b, `],"metadata":{"billableCharacterCount":`...)
	b = appendInt(b, chars)
	b = append(b, `}}`...)
	s.writeJSON(c, b, billed{input: total}, 0)
}

// vertexAnthropic serves Claude models: the body must carry
// anthropic_version vertex-2023-10-16 and no model; the model of the path
// is put in for the Messages handler.
func (s *Server) vertexAnthropic(w http.ResponseWriter, r *http.Request) {
	if !s.vertexAuth(w, r) {
		return
	}
	model, method, _ := strings.Cut(r.PathValue("call"), ":")
	if model == "count-tokens" && method == "rawPredict" {
		s.vertexCountTokens(w, r)
		return
	}
	if method != "rawPredict" && method != "streamRawPredict" {
		writeError(w, flavorGemini, http.StatusNotFound, "Method not found: "+method)
		return
	}
	body, ok := vertexClaudeBody(w, r)
	if !ok {
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
	body["model"], _ = json.Marshal(model)
	setBody(r, body)
	s.anthropic(s.messages)(w, r)
}

// vertexCountTokens answers count-tokens:rawPredict: Anthropic's
// count_tokens with Vertex's body (anthropic_version required, the model in
// the body).
func (s *Server) vertexCountTokens(w http.ResponseWriter, r *http.Request) {
	body, ok := vertexClaudeBody(w, r)
	if !ok {
		return
	}
	var model string
	if json.Unmarshal(body["model"], &model) != nil || !strings.HasPrefix(model, "claude") {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "model: a Claude model is required")
		return
	}
	setBody(r, body)
	s.anthropic(s.countTokens)(w, r)
}

// vertexClaudeBody reads a Claude request's body, which must carry
// anthropic_version vertex-2023-10-16 (removed from the map returned); it
// reports false after answering 400.
func vertexClaudeBody(w http.ResponseWriter, r *http.Request) (map[string]json.RawMessage, bool) {
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var body map[string]json.RawMessage
	if err != nil || json.Unmarshal(raw, &body) != nil {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "invalid JSON body")
		return nil, false
	}
	if string(body["anthropic_version"]) != `"vertex-2023-10-16"` {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "anthropic_version: must be vertex-2023-10-16")
		return nil, false
	}
	delete(body, "anthropic_version")
	return body, true
}

// setBody replaces the request's body with body, encoded.
func setBody(r *http.Request, body map[string]json.RawMessage) {
	b, _ := json.Marshal(body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
}
