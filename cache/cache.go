package cache

import (
	"errors"
	"time"
)

// API is a client API whose replies the cache stores and renders. The strings
// are the processor's names of the same APIs.
type API string

// The client APIs the cache serves.
const (
	APIChat           API = "openai.chat_completions" // POST /v1/chat/completions
	APICompletions    API = "openai.completions"      // POST /v1/completions
	APIEmbeddings     API = "openai.embeddings"       // POST /v1/embeddings
	APIResponses      API = "openai.responses"        // POST /v1/responses
	APIMessages       API = "anthropic.messages"      // POST /v1/messages
	APIGeminiGenerate API = "gemini.generate_content" // :generateContent, :streamGenerateContent
)

// Errors of the package; a request's own errors are for its client (400).
var (
	// ErrBadTTL: the x-tollgate-cache-ttl header is not a duration in
	// (0, MaxTTL] (a Go duration such as "90s" or "1h", or whole seconds).
	ErrBadTTL = errors.New("cache: x-tollgate-cache-ttl must be a duration such as 90s or 1h, at most 720h")
	// ErrBadBody: the request body is not a JSON object.
	ErrBadBody = errors.New("cache: the request body is not a JSON object")
	// ErrUnsupported: the API has no cache form (count_tokens, …), or the
	// reply cannot be rendered the way the request asks for it.
	ErrUnsupported = errors.New("cache: not cacheable")
	// ErrTooLarge: the entry is larger than the backend's cap per entry.
	ErrTooLarge = errors.New("cache: entry too large")
)

// MaxTTL bounds every entry's time to live.
const MaxTTL = 30 * 24 * time.Hour

// Mode is how a model group's replies are cached.
type Mode uint8

// Modes.
const (
	ModeOff      Mode = iota // not cached
	ModeExact                // the same canonical request
	ModeSemantic             // exact first, then the nearest prompt above the threshold
)

// String is the mode's name in configuration ("off", "exact", "semantic").
func (m Mode) String() string {
	switch m {
	case ModeExact:
		return "exact"
	case ModeSemantic:
		return "semantic"
	default:
		return "off"
	}
}

// ParseMode reads a mode's name ("" is off).
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "off":
		return ModeOff, nil
	case "exact":
		return ModeExact, nil
	case "semantic":
		return ModeSemantic, nil
	}
	return ModeOff, errors.New("cache: mode must be off, exact or semantic")
}

// Level is how widely an entry is shared. Whatever the level, an entry is
// never shared across organizations.
type Level uint8

// Levels.
const (
	LevelKey  Level = iota // the virtual key that stored it
	LevelTeam              // every key of its team (a key without a team: its own)
	LevelOrg               // every key of its organization (a key without one: its own)
)

// String is the level's name in configuration ("key", "team", "org").
func (l Level) String() string {
	switch l {
	case LevelTeam:
		return "team"
	case LevelOrg:
		return "org"
	default:
		return "key"
	}
}

// ParseLevel reads a level's name ("" is key).
func ParseLevel(s string) (Level, error) {
	switch s {
	case "", "key":
		return LevelKey, nil
	case "team":
		return LevelTeam, nil
	case "org":
		return LevelOrg, nil
	}
	return LevelKey, errors.New("cache: scope must be key, team or org")
}

// Match says which requests of a model group are cacheable.
type Match uint8

// Matches.
const (
	// MatchDeterministic (the default): requests that ask for a
	// deterministic answer — temperature 0 given explicitly (generationConfig.
	// temperature for Gemini) — and every embeddings request. A request
	// without a temperature gets the provider's default (1 for most), so it
	// is not cached.
	MatchDeterministic Match = iota
	// MatchAll: every request of the group (LiteLLM's behaviour when its
	// cache is on).
	MatchAll
)

// Policy is a model group's cache configuration.
type Policy struct {
	Mode  Mode
	TTL   time.Duration // 0: DefaultTTL
	Level Level
	Match Match
	// Threshold is the least cosine similarity of a semantic hit (0:
	// DefaultThreshold).
	Threshold float64
	// EmbeddingModel is the model group that embeds prompts for the semantic
	// cache (through the gateway's routing and accounting).
	EmbeddingModel string
}

// Defaults of a Policy.
const (
	DefaultTTL       = time.Hour
	DefaultThreshold = 0.95
)

// Tenant is who asks: the ids of the key and the scopes above it.
type Tenant struct {
	Org, Team, Key string
}

// Request is what the cache reads of one client request.
type Request struct {
	API   API
	Model string // the model group the client named
	Body  []byte // the client's body, as received
	// Stream: the client asked for a stream. JSONArray: a Gemini stream
	// without alt=sse (a JSON array streamed) rather than SSE.
	Stream, JSONArray bool
	Tenant            Tenant
	// CacheControl and TTL are the request's Cache-Control and
	// x-tollgate-cache-ttl headers ("" when absent).
	CacheControl, TTL string
	// Vary is mixed into the key: request headers that change the answer
	// (anthropic-beta, …).
	Vary string
}

// Header names the cache reads and writes.
const (
	HeaderTTL    = "x-tollgate-cache-ttl" // request: the entry's TTL; opts the request in
	HeaderStatus = "x-tollgate-cache"     // reply: hit | miss | skip (+ "; semantic; score=0.97")
	HeaderAge    = "age"                  // reply: seconds since the entry was stored (RFC 9111 §5.1)
)
