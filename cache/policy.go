package cache

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// Plan is what the cache does for one request, decided before any I/O.
type Plan struct {
	// Lookup: look the request up; Store: store its reply when it completes
	// (a 2xx). Neither: the request is skipped (Reason says why).
	Lookup, Store bool
	Reason        string // "disabled", "not_deterministic", "no-cache", "no-store", "unsupported"
	Key           Key
	TTL           time.Duration
	// Semantic: also look up by the prompt's embedding in Namespace.
	// Namespace and Prompt are read from the request when the exact lookup
	// misses (Cache.Lookup), or at once when the plan looks nothing up.
	Semantic  bool
	Namespace string
	Prompt    string
	Threshold float64
	Embedding string // the embedding model group

	api                     API
	stream, jsonArray, incl bool      // how the client wants the reply (render.go)
	vec                     []float32 // the prompt's embedding, once Lookup made it
	sem                     semSource // a semantic plan's request until resolveSemantic
}

// Skipped reports whether the request neither looks up nor stores.
func (p *Plan) Skipped() bool { return !p.Lookup && !p.Store }

// Stream reports whether the client asked for a stream.
func (p *Plan) Stream() bool { return p.stream }

// NewPlan decides what the cache does for req under the model group's
// policy. Its errors are the client's (ErrBadTTL, ErrBadBody): a 400.
func NewPlan(req *Request, pol *Policy) (Plan, error) {
	p := Plan{api: req.API, stream: req.Stream, jsonArray: req.JSONArray}
	if pol == nil || pol.Mode == ModeOff {
		p.Reason = "disabled"
		return p, nil
	}
	if _, ok := ignoredFields[req.API]; !ok {
		p.Reason = "unsupported"
		return p, nil
	}
	ttl, optIn, err := parseTTL(req.TTL)
	if err != nil {
		return p, err
	}
	c, err := canonicalize(req.API, req.Body)
	if err != nil {
		return p, err
	}
	defer c.release()
	facts := c.facts()
	p.incl = (req.API == APIChat || req.API == APICompletions) && facts.includeUsage
	if !optIn && pol.Match == MatchDeterministic && !deterministic(req.API, &facts) {
		p.Reason = "not_deterministic"
		return p, nil
	}
	noCache, noStore := cacheControl(req.CacheControl)
	p.Lookup, p.Store = !noCache, !noStore && ttl >= 0
	if !p.Lookup {
		p.Reason = "no-cache"
	} else if !p.Store {
		p.Reason = "no-store"
	}
	switch {
	case ttl > 0:
		p.TTL = ttl
	case pol.TTL > 0:
		p.TTL = min(pol.TTL, MaxTTL)
	default:
		p.TTL = DefaultTTL
	}
	p.Key = c.key(req, req.Tenant, pol.Level)
	if pol.Mode == ModeSemantic && pol.EmbeddingModel != "" {
		// The namespace and the prompt's text are read when the exact
		// lookup misses (resolveSemantic): decoding the body for them cost
		// an exact hit of a semantic group as much as the hit itself.
		p.Semantic, p.Threshold, p.Embedding = true, pol.Threshold, pol.EmbeddingModel
		if p.Threshold <= 0 {
			p.Threshold = DefaultThreshold
		}
		p.sem = semSource{body: req.Body, model: req.Model, vary: req.Vary, tenant: req.Tenant, level: pol.Level, pending: true}
		if !p.Lookup {
			p.resolveSemantic() // no lookup: the store reads them, and the body is not kept
		}
	}
	return p, nil
}

// semSource is what resolveSemantic reads: the request's body (valid until
// the lookup returns) and what the namespace is keyed on.
type semSource struct {
	body        []byte
	model, vary string
	tenant      Tenant
	level       Level
	pending     bool
}

// resolveSemantic sets a semantic plan's Namespace and Prompt from its
// request (Semantic false when the body has no prompt text), once; the
// body is not kept.
func (p *Plan) resolveSemantic() {
	if !p.sem.pending {
		return
	}
	src := p.sem
	p.sem = semSource{}
	req := Request{API: p.api, Model: src.model, Vary: src.vary}
	body, err := parseBody(src.body)
	if err != nil {
		p.Semantic = false
		return
	}
	for _, f := range ignoredFields[p.api] {
		delete(body, f)
	}
	ns, prompt, ok := semanticParts(&req, scopeID(src.tenant, src.level), body)
	p.Semantic, p.Namespace, p.Prompt = ok, ns, prompt
}

// parseTTL reads x-tollgate-cache-ttl: a Go duration or whole seconds.
// Present, it opts the request in; "0" means do not store. ttl is -1 for
// "0", 0 when absent.
func parseTTL(h string) (ttl time.Duration, optIn bool, err error) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false, nil
	}
	if n, err := strconv.ParseInt(h, 10, 64); err == nil {
		if n < 0 || n > int64(MaxTTL/time.Second) {
			return 0, false, ErrBadTTL
		}
		ttl = time.Duration(n) * time.Second
	} else if ttl, err = time.ParseDuration(h); err != nil || ttl < 0 || ttl > MaxTTL {
		return 0, false, ErrBadTTL
	}
	if ttl == 0 {
		return -1, true, nil
	}
	return ttl, true, nil
}

// cacheControl reads the request directives of Cache-Control (RFC 9111
// §5.2.1): no-cache (do not answer from the cache) and no-store (do not
// store the reply). Directive names are case-insensitive.
func cacheControl(h string) (noCache, noStore bool) {
	for d := range strings.SplitSeq(h, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(d), "=")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "no-cache":
			noCache = true
		case "no-store":
			noStore = true
		}
	}
	return noCache, noStore
}

// deterministic reports whether the request asks for a deterministic
// answer: embeddings always; otherwise a temperature of exactly 0
// (generationConfig.temperature for Gemini).
func deterministic(api API, f *bodyFacts) bool {
	if api == APIEmbeddings {
		return true
	}
	t := f.temperature
	if api == APIGeminiGenerate {
		t = nil
		if _, v, ok := bytes.Cut(f.genConfig, []byte(`"temperature":`)); ok {
			end := bytes.IndexAny(v, ",}")
			if end < 0 {
				return false
			}
			t = v[:end]
		}
	}
	if t == nil {
		return false
	}
	n, err := strconv.ParseFloat(string(t), 64)
	return err == nil && n == 0
}
