package mockllm

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-ai/tollgate/internal/mockmcp"
)

// Server is the mock provider: an http.Handler serving every endpoint of the
// package documentation.
type Server struct {
	cfg   Config
	mux   *http.ServeMux
	seq   atomic.Uint64
	stats sync.Map // api key → *counters
	lines sync.Map // lineKey → *counters: the bill per day × model × key (reports.go)
	bat   batches  // files and batches (batches.go)
	cache sync.Map // cacheKey → struct{}: prompt prefixes seen (Anthropic caching)
	// tokens maps the access tokens POST /token issued to their service
	// account (vertex.go).
	tokens sync.Map
	seed   maphash.Seed
	now    func() time.Time
	// active counts requests being served (tests wait on it).
	active atomic.Int64
	faults faults            // per-deployment faults and counts (faults.go)
	kept   responseStore     // Responses kept (responses_store.go)
	convs  conversationStore // conversations.go
	// received: the system texts of the requests served (received.go).
	received receivedLog
}

var _ http.Handler = (*Server)(nil)

// maxBody bounds a request body.
const maxBody = 32 << 20

// New returns a mock provider with cfg; zero fields of cfg that must not be
// zero (Models, EmbeddingDimensions) take DefaultConfig's values.
func New(cfg Config) *Server {
	def := DefaultConfig()
	if len(cfg.Models) == 0 {
		cfg.Models = def.Models
	}
	if cfg.EmbeddingDimensions == 0 {
		cfg.EmbeddingDimensions = def.EmbeddingDimensions
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), seed: maphash.MakeSeed(), now: time.Now}
	s.mux.HandleFunc("POST /v1/chat/completions", s.openAI(s.chat))
	s.mux.HandleFunc("POST /v1/completions", s.openAI(s.completions))
	s.mux.HandleFunc("POST /v1/embeddings", s.openAI(s.embeddings))
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/moderations", s.openAI(s.moderations))   // moderation.go
	s.mux.HandleFunc("POST /v1/images/generations", s.openAI(s.images)) // units.go
	s.mux.HandleFunc("POST /v1/images/edits", s.openAI(s.imageEdits))
	s.mux.HandleFunc("POST /v1/audio/speech", s.openAI(s.speech))
	s.mux.HandleFunc("POST /v1/audio/transcriptions", s.openAI(s.transcriptions("transcribe")))
	s.mux.HandleFunc("POST /v1/audio/translations", s.openAI(s.transcriptions("translate")))
	s.mux.HandleFunc("POST /v1/rerank", s.openAI(s.rerank))
	s.mux.HandleFunc("POST /v2/rerank", s.openAI(s.rerank))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/images/generations", s.azure(s.images))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/images/edits", s.azure(s.imageEdits))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/audio/speech", s.azure(s.speech))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/audio/transcriptions", s.azure(s.transcriptions("transcribe")))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/audio/translations", s.azure(s.transcriptions("translate")))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/moderations", s.azure(s.moderations))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/chat/completions", s.azure(s.chat))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/completions", s.azure(s.completions))
	s.mux.HandleFunc("POST /openai/deployments/{deployment}/embeddings", s.azure(s.embeddings))
	s.mux.HandleFunc("POST /v1/responses", s.openAI(s.responses))
	s.mux.HandleFunc("POST /openai/v1/responses", s.openAI(s.responses)) // Azure's v1 API
	for _, base := range []string{"/v1/responses/", "/openai/v1/responses/"} {
		s.mux.HandleFunc("GET "+base+"{id}", s.storedResponseCall)
		s.mux.HandleFunc("DELETE "+base+"{id}", s.storedResponseCall)
		s.mux.HandleFunc("GET "+base+"{id}/{sub}", s.storedResponseCall)
		s.mux.HandleFunc("POST "+base+"{id}/{sub}", s.storedResponseCall)
	}
	for _, base := range []string{"/v1/conversations", "/openai/v1/conversations"} {
		s.mux.HandleFunc("POST "+base, s.conversationsCall)
		for _, m := range []string{"GET ", "POST ", "DELETE "} {
			s.mux.HandleFunc(m+base+"/{id}", s.conversationsCall)
			s.mux.HandleFunc(m+base+"/{id}/{sub}", s.conversationsCall)
			s.mux.HandleFunc(m+base+"/{id}/{sub}/{item}", s.conversationsCall)
		}
	}
	s.mux.HandleFunc("POST /v1/messages", s.anthropic(s.messages))
	s.mux.HandleFunc("POST /v1/messages/count_tokens", s.anthropic(s.countTokens))
	s.mux.HandleFunc("POST /v1beta/models/{call}", s.gemini) // gemini.go
	s.mux.HandleFunc("POST /v1/models/{call}", s.gemini)
	s.mux.HandleFunc("GET /v1beta/models", s.geminiModels)
	s.mux.HandleFunc("POST /model/{model}/converse", s.bedrock(s.converse)) // bedrock.go
	s.mux.HandleFunc("POST /model/{model}/converse-stream", s.bedrock(s.converseStream))
	s.mux.HandleFunc("POST /model/{model}/invoke", s.bedrock(s.invoke))
	s.mux.HandleFunc("POST /model/{model}/count-tokens", s.bedrock(s.bedrockCountTokens))
	s.mux.HandleFunc("POST /token", s.vertexToken) // vertex.go
	s.mux.HandleFunc("POST /v1/projects/{project}/locations/{location}/publishers/google/models/{call}", s.vertexGoogle)
	s.mux.HandleFunc("POST /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{call}", s.vertexAnthropic)
	s.mux.HandleFunc("GET /v1/organization/usage/completions", s.openAIUsage(lineCompletions)) // reports.go
	s.mux.HandleFunc("GET /v1/organization/usage/embeddings", s.openAIUsage(lineEmbeddings))
	s.mux.HandleFunc("GET /v1/organization/costs", s.openAICosts)
	s.mux.HandleFunc("GET /v1/organizations/usage_report/messages", s.anthropicUsage)
	s.mux.HandleFunc("GET /v1/organizations/cost_report", s.anthropicCosts)
	s.registerBatches()
	mockmcp.Register(s.mux) // the demo MCP server on /mcp
	s.mux.HandleFunc("GET /stats", s.getStats)
	s.mux.HandleFunc("GET /received/system", s.receivedSystem) // received.go
	s.mux.HandleFunc("POST /stats/reset", s.resetStats)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, flavorOpenAI, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+r.URL.Path)
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.active.Add(1)
	defer s.active.Add(-1)
	if s.intercept(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) inflight() int64 { return s.active.Load() }

// Serve serves HTTP/1.1 and h2c on lis until ctx is done, then shuts down
// gracefully: in-flight replies get up to 5 s to finish.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{
		Handler:           s,
		Protocols:         &protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case err := <-errc:
		return fmt.Errorf("mockllm: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		err = errors.Join(err, srv.Close())
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// Run listens on cfg.Addr, writes "mockllm listening on <addr>" to out and
// serves until ctx is done.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	lis, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("mockllm: listen: %w", err)
	}
	if _, err := fmt.Fprintf(out, "mockllm listening on %s\n", lis.Addr()); err != nil {
		return errors.Join(err, lis.Close())
	}
	return New(cfg).Serve(ctx, lis)
}

// flavor selects the error shape and the key headers of an API.
type flavor int

const (
	flavorOpenAI flavor = iota
	flavorAnthropic
	flavorGemini
	flavorBedrock
)

// call is one parsed request with its overrides.
type call struct {
	w          http.ResponseWriter
	r          *http.Request
	flavor     flavor
	key        string
	deployment string // Azure: the deployment of the path
	status     int
	disconnect int // -1: never
	latency    time.Duration
	chunkDelay time.Duration
	output     int64
	cached     int64
	toolCall   string // x-mock-tool-call
	replyModel string // x-mock-reply-model: the model the reply names
	model      string // the model billed (reports.go); set by the handler
	batch      bool   // a line of a batch (batches.go): billed at half price
}

type handler func(*call)

func (s *Server) openAI(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, flavorOpenAI, "", h) }
}

func (s *Server) azure(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api-version") == "" {
			writeError(w, flavorOpenAI, http.StatusNotFound, "Resource not found")
			return
		}
		s.serve(w, r, flavorOpenAI, r.PathValue("deployment"), h)
	}
}

func (s *Server) anthropic(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, flavorAnthropic, "", h) }
}

// serve parses the overrides, injects the error of x-mock-status and runs h.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, f flavor, deployment string, h handler) {
	c := &call{
		w: w, r: r, flavor: f, key: apiKey(r), deployment: deployment, batch: isBatchLine(r),
		disconnect: -1, latency: s.cfg.Latency, chunkDelay: s.cfg.ChunkDelay,
		output: int64(s.cfg.OutputTokens),
	}
	if err := c.overrides(); err != nil {
		writeError(w, f, http.StatusBadRequest, err.Error())
		return
	}
	if c.status != 0 {
		if !sleep(r.Context(), c.latency) {
			return
		}
		if c.status == http.StatusTooManyRequests {
			w.Header()["Retry-After"] = hvOne
		}
		writeError(w, f, c.status, "injected by x-mock-status")
		s.counters(c.key).errors.Add(1)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, bodyLimit(r.URL.Path))
	h(c)
}

// overrides reads the x-mock-* headers.
func (c *call) overrides() error {
	h := c.r.Header
	c.toolCall = header(h, "X-Mock-Tool-Call")
	c.replyModel = header(h, "X-Mock-Reply-Model")
	if v := header(h, "X-Mock-Status"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 200 || n > 599 {
			return fmt.Errorf("x-mock-status: bad status %q", v)
		}
		if n >= 300 {
			c.status = n
		}
	}
	if v := header(h, "X-Mock-Disconnect-After"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("x-mock-disconnect-after: bad count %q", v)
		}
		c.disconnect = n
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"X-Mock-Latency", &c.latency}, {"X-Mock-Chunk-Delay", &c.chunkDelay}} {
		if v := header(h, d.name); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur < 0 {
				return fmt.Errorf("%s: bad duration %q", strings.ToLower(d.name), v)
			}
			*d.dst = dur
		}
	}
	for _, d := range []struct {
		name string
		dst  *int64
	}{{"X-Mock-Output-Tokens", &c.output}, {"X-Mock-Cached-Tokens", &c.cached}} {
		if v := header(h, d.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: bad count %q", strings.ToLower(d.name), v)
			}
			*d.dst = n
		}
	}
	return nil
}

// decode reads the JSON body into v, answering 400 on failure.
func (c *call) decode(v any) bool {
	if err := c.decodeBody(v); err != nil {
		writeError(c.w, c.flavor, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// header is the first value of h under key, which must be canonical
// ("X-Mock-Status"): http.Header.Get canonicalises its argument, an
// allocation per call for a lower-case name. Servers canonicalise the names
// of received headers.
func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Header values shared by every reply (net/http only reads them).
var (
	hvJSON        = []string{"application/json"}
	hvEventStream = []string{"text/event-stream; charset=utf-8"}
	hvNoCache     = []string{"no-cache"}
	hvOne         = []string{"1"}
)

// setJSON sets the headers of a JSON reply of n bytes.
func setJSON(h http.Header, n int) {
	h["Content-Type"] = hvJSON
	h["Content-Length"] = []string{strconv.Itoa(n)}
}

// apiKey is the caller's key: Authorization Bearer, else api-key, else x-api-key.
func apiKey(r *http.Request) string {
	if v := header(r.Header, "Authorization"); v != "" {
		if id := awsAccessKey(v); id != "" { // SigV4: billed to the access key
			return id
		}
		if k, ok := strings.CutPrefix(v, "Bearer "); ok {
			return strings.TrimSpace(k)
		}
		return v
	}
	if v := header(r.Header, "Api-Key"); v != "" {
		return v
	}
	if v := header(r.Header, "X-Api-Key"); v != "" {
		return v
	}
	return geminiKey(r)
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// abort closes the connection under a reply without finishing it: the client
// sees a truncated body (HTTP/1.1) or a stream reset (HTTP/2).
func abort(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		_ = conn.Close()
		return
	}
	// HTTP/2 cannot be hijacked; net/http documents ErrAbortHandler as the way
	// to reset the stream without logging.
	panic(http.ErrAbortHandler)
}

// writeError writes a provider-shaped error reply.
func writeError(w http.ResponseWriter, f flavor, status int, msg string) {
	if f == flavorBedrock {
		writeBedrockError(w, status, bedrockErrorType(status), msg)
		return
	}
	b := make([]byte, 0, 160)
	switch f {
	case flavorGemini:
		b = appendGeminiError(b, status, msg)
	case flavorAnthropic:
		b = append(b, `{"type":"error","error":{"type":`...)
		b = appendString(b, anthropicErrorType(status))
		b = append(b, `,"message":`...)
		b = appendString(b, msg)
		b = append(b, `}}`...)
	default:
		typ, code := openAIErrorType(status)
		b = append(b, `{"error":{"message":`...)
		b = appendString(b, msg)
		b = append(b, `,"type":`...)
		b = appendString(b, typ)
		b = append(b, `,"param":null,"code":`...)
		if code == "" {
			b = append(b, "null"...)
		} else {
			b = appendString(b, code)
		}
		b = append(b, `}}`...)
	}
	setJSON(w.Header(), len(b))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func openAIErrorType(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "permission_error", ""
	case status == http.StatusNotFound:
		return "invalid_request_error", "not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	default:
		return "invalid_request_error", ""
	}
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		if status >= 500 {
			return "api_error"
		}
		return "invalid_request_error"
	}
}

func hashBytes(s *Server, b []byte) uint64 { return maphash.Bytes(s.seed, b) }
