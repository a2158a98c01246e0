package mockllm

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The providers' own usage and cost reports, served from the mock's bill.
//
// OpenAI's organization Usage API (GET /v1/organization/usage/completions,
// …/embeddings) and Costs API (GET /v1/organization/costs), and Anthropic's
// Usage & Cost Admin API (GET /v1/organizations/usage_report/messages,
// /v1/organizations/cost_report), with their request parameters, pagination
// (limit buckets a page, has_more, next_page) and response shapes. Only
// daily buckets (bucket_width=1d) are served. An admin request carries
// Config.AdminKey (OpenAI: Authorization: Bearer; Anthropic: x-api-key, with
// an anthropic-version header); anything else is answered 401.
//
// A line of the bill is one UTC day × API × model × API key: chat
// completions, completions and Responses requests are OpenAI "completions",
// embeddings are "embeddings", Anthropic Messages are "messages". A line
// counts what /stats counts (delivered tokens of billable replies). Its cost
// is ceil(tokens × price / 1e6) nano-USD per token kind with Config.Prices of
// the model (a model without a price costs nothing). The key appears as
// api_key_id "key_<hex>" (OpenAI) or "apikey_<hex>" (Anthropic), <hex> being
// the first 16 hex digits of the key's SHA-256 (APIKeyID); the project is
// "proj_mock" and the workspace "wrkspc_mock".

// Price is what the mock bills a model, in nano-USD per million tokens.
type Price struct {
	Input       int64 `json:"input"`        // uncached input
	CachedInput int64 `json:"cached_input"` // cache reads
	CacheWrite  int64 `json:"cache_write"`  // cache creation (Anthropic)
	Output      int64 `json:"output"`
}

type lineKind uint8

const (
	lineCompletions lineKind = iota
	lineEmbeddings
	lineMessages
)

type lineKey struct {
	day   int64 // Unix seconds of the UTC day's start
	kind  lineKind
	model string
	key   string
	batch bool // a batch line (batches.go), billed at half price
}

const day = 24 * time.Hour

// recordLine records b on the report line of c (nil when c's API is not
// reported) and returns the line, so that output can be added to it.
func (s *Server) recordLine(c *call, b billed) *counters {
	if c.model == "" {
		return nil
	}
	kind := lineCompletions
	switch {
	case c.flavor == flavorAnthropic:
		kind = lineMessages
	case c.flavor != flavorOpenAI:
		return nil
	case strings.HasSuffix(c.r.URL.Path, "/embeddings"):
		kind = lineEmbeddings
	}
	k := lineKey{day: s.now().UTC().Truncate(day).Unix(), kind: kind, model: c.model, key: c.key, batch: c.batch}
	v, ok := s.lines.Load(k)
	if !ok {
		v, _ = s.lines.LoadOrStore(k, new(counters))
	}
	l := v.(*counters)
	b.record(l)
	return l
}

// APIKeyID is the id the mock's reports give the API key `key` (without the
// provider's prefix "key_" or "apikey_").
func APIKeyID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}

// line is one line of the bill, read for a report.
type line struct {
	lineKey
	Usage
}

// cost is the line's cost per token kind, in nano-USD; a batch line's
// prices are half (rounded down to the nano-dollar per million tokens).
func (l *line) cost(p Price) (input, cached, creation, output int64) {
	if l.batch {
		p = Price{Input: p.Input / 2, CachedInput: p.CachedInput / 2, CacheWrite: p.CacheWrite / 2, Output: p.Output / 2}
	}
	c := func(tokens, price int64) int64 { return (tokens*price + 999_999) / 1_000_000 }
	return c(l.InputTokens, p.Input), c(l.CachedTokens, p.CachedInput), c(l.CacheCreationTokens, p.CacheWrite), c(l.OutputTokens, p.Output)
}

// linesOf returns the lines of the given kinds, ordered by day, model, key.
func (s *Server) linesOf(kinds ...lineKind) []line {
	var out []line
	s.lines.Range(func(k, v any) bool {
		lk := k.(lineKey)
		if slices.Contains(kinds, lk.kind) {
			out = append(out, line{lineKey: lk, Usage: v.(*counters).usage()})
		}
		return true
	})
	slices.SortFunc(out, func(a, b line) int {
		return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.model, b.model), cmp.Compare(a.key, b.key), cmp.Compare(a.kind, b.kind))
	})
	return out
}

// reportQuery is the parsed time range and paging of a report request.
type reportQuery struct {
	start, end int64 // Unix seconds; buckets are the days in [start, end)
	limit      int
	groupBy    []string
	models     []string
	keyIDs     []string
}

// list reads an array parameter written as name=a&name=b, name[]=a or
// name=a,b.
func list(q url.Values, name string) []string {
	var out []string
	for _, v := range append(q[name], q[name+"[]"]...) {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// parseQuery reads the common parameters; start and end are already parsed
// by the caller's format (Unix seconds or RFC 3339). It returns an error
// message for the client.
func parseQuery(q url.Values, start, end int64, maxLimit int, groups []string) (reportQuery, string) {
	rq := reportQuery{start: time.Unix(start, 0).UTC().Truncate(day).Unix(), end: end, limit: 7}
	if w := q.Get("bucket_width"); w != "" && w != "1d" {
		return rq, "bucket_width: the mock serves 1d buckets only"
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return rq, fmt.Sprintf("limit: must be an integer from 1 to %d", maxLimit)
		}
		rq.limit = n
	}
	if p := q.Get("page"); p != "" {
		raw, err := base64.RawURLEncoding.DecodeString(p)
		n, perr := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || perr != nil || n < rq.start {
			return rq, "page: not a next_page token of this report"
		}
		rq.start = n
	}
	rq.groupBy = list(q, "group_by")
	for _, g := range rq.groupBy {
		if !slices.Contains(groups, g) {
			return rq, fmt.Sprintf("group_by: %q is not one of %s", g, strings.Join(groups, ", "))
		}
	}
	rq.models, rq.keyIDs = list(q, "models"), list(q, "api_key_ids")
	return rq, ""
}

// days are the bucket starts of this page and the next page's token ("" when
// this is the last page).
func (rq *reportQuery) days() (starts []int64, next string) {
	for d := rq.start; d < rq.end; d += int64(day / time.Second) {
		if len(starts) == rq.limit {
			return starts, base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(d, 10)))
		}
		starts = append(starts, d)
	}
	return starts, ""
}

func (rq *reportQuery) grouped(g string) bool { return slices.Contains(rq.groupBy, g) }

// admit checks the admin credential of a report request.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, f flavor) bool {
	given := header(r.Header, "X-Api-Key")
	if f == flavorOpenAI {
		given, _ = strings.CutPrefix(header(r.Header, "Authorization"), "Bearer ")
	}
	if s.cfg.AdminKey == "" || subtle.ConstantTimeCompare([]byte(given), []byte(s.cfg.AdminKey)) != 1 {
		msg := "Incorrect API key provided: an admin key is required"
		if f == flavorAnthropic {
			msg = "invalid x-api-key"
		}
		writeError(w, f, http.StatusUnauthorized, msg)
		return false
	}
	if f == flavorAnthropic && header(r.Header, "Anthropic-Version") == "" {
		writeError(w, f, http.StatusBadRequest, "anthropic-version: header is required")
		return false
	}
	return true
}

func writeReport(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, flavorOpenAI, http.StatusInternalServerError, err.Error())
		return
	}
	setJSON(w.Header(), len(b))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// openAIRange reads start_time (required) and end_time (default now).
func (s *Server) openAIRange(w http.ResponseWriter, q url.Values, maxLimit int, groups []string) (reportQuery, bool) {
	start, err := strconv.ParseInt(q.Get("start_time"), 10, 64)
	if err != nil {
		writeError(w, flavorOpenAI, http.StatusBadRequest, "start_time: required, Unix seconds")
		return reportQuery{}, false
	}
	end := s.now().Unix()
	if v := q.Get("end_time"); v != "" {
		if end, err = strconv.ParseInt(v, 10, 64); err != nil {
			writeError(w, flavorOpenAI, http.StatusBadRequest, "end_time: Unix seconds")
			return reportQuery{}, false
		}
	}
	rq, msg := parseQuery(q, start, end, maxLimit, groups)
	if msg != "" {
		writeError(w, flavorOpenAI, http.StatusBadRequest, msg)
		return rq, false
	}
	return rq, true
}

// openAIPage is the page of both OpenAI report APIs.
type openAIPage struct {
	Object   string         `json:"object"` // "page"
	Data     []openAIBucket `json:"data"`
	HasMore  bool           `json:"has_more"`
	NextPage *string        `json:"next_page"`
}

type openAIBucket struct {
	Object    string `json:"object"` // "bucket"
	StartTime int64  `json:"start_time"`
	EndTime   int64  `json:"end_time"`
	Results   []any  `json:"results"`
}

type openAIUsageResult struct {
	Object            string  `json:"object"`
	InputTokens       int64   `json:"input_tokens"`
	OutputTokens      *int64  `json:"output_tokens,omitempty"`
	InputCachedTokens *int64  `json:"input_cached_tokens,omitempty"`
	InputAudioTokens  *int64  `json:"input_audio_tokens,omitempty"`
	OutputAudioTokens *int64  `json:"output_audio_tokens,omitempty"`
	NumModelRequests  int64   `json:"num_model_requests"`
	ProjectID         *string `json:"project_id"`
	UserID            *string `json:"user_id"`
	APIKeyID          *string `json:"api_key_id"`
	Model             *string `json:"model"`
	Batch             *bool   `json:"batch,omitempty"`
	ServiceTier       *string `json:"service_tier,omitempty"`
}

type openAICostResult struct {
	Object string `json:"object"` // "organization.costs.result"
	Amount struct {
		Value    float64 `json:"value"`
		Currency string  `json:"currency"`
	} `json:"amount"`
	LineItem  *string `json:"line_item"`
	ProjectID *string `json:"project_id"`
	APIKeyID  *string `json:"api_key_id"`
}

func ptr[T any](v T) *T { return &v }

// group folds the lines of one day into results keyed by the grouped
// dimensions (model, api key id), in order of first appearance.
type group struct {
	model, keyID string
	batch        bool
	Usage
	lines []line
}

func groupLines(lines []line, dayStart int64, rq *reportQuery, keyPrefix string) []*group {
	var out []*group
	type groupKey struct {
		model, keyID string
		batch        bool
	}
	idx := map[groupKey]*group{}
	for _, l := range lines {
		if l.day != dayStart {
			continue
		}
		keyID := keyPrefix + APIKeyID(l.key)
		if len(rq.models) > 0 && !slices.Contains(rq.models, l.model) || len(rq.keyIDs) > 0 && !slices.Contains(rq.keyIDs, keyID) {
			continue
		}
		var k groupKey
		if rq.grouped("model") {
			k.model = l.model
		}
		if rq.grouped("api_key_id") {
			k.keyID = keyID
		}
		if rq.grouped("batch") {
			k.batch = l.batch
		}
		g := idx[k]
		if g == nil {
			g = &group{model: k.model, keyID: k.keyID, batch: k.batch}
			idx[k] = g
			out = append(out, g)
		}
		g.Requests += l.Requests
		g.InputTokens += l.InputTokens
		g.CachedTokens += l.CachedTokens
		g.CacheCreationTokens += l.CacheCreationTokens
		g.OutputTokens += l.OutputTokens
		g.lines = append(g.lines, l)
	}
	return out
}

func (g *group) dims(rq *reportQuery) (model, keyID *string) {
	if rq.grouped("model") {
		model = ptr(g.model)
	}
	if rq.grouped("api_key_id") {
		keyID = ptr(g.keyID)
	}
	return model, keyID
}

func openAIPageOf(rq *reportQuery, result func(dayStart int64) []any) openAIPage {
	starts, next := rq.days()
	page := openAIPage{Object: "page", Data: []openAIBucket{}, HasMore: next != ""}
	if next != "" {
		page.NextPage = &next
	}
	for _, d := range starts {
		page.Data = append(page.Data, openAIBucket{Object: "bucket", StartTime: d, EndTime: d + int64(day/time.Second), Results: result(d)})
	}
	return page
}

// openAIUsage serves GET /v1/organization/usage/{completions,embeddings}.
func (s *Server) openAIUsage(kind lineKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, flavorOpenAI) {
			return
		}
		rq, ok := s.openAIRange(w, r.URL.Query(), 31, []string{"project_id", "user_id", "api_key_id", "model", "batch", "service_tier"})
		if !ok {
			return
		}
		lines := s.linesOf(kind)
		writeReport(w, openAIPageOf(&rq, func(d int64) []any {
			results := []any{}
			for _, g := range groupLines(lines, d, &rq, "key_") {
				res := openAIUsageResult{
					Object:           "organization.usage.completions.result",
					InputTokens:      g.InputTokens + g.CachedTokens,
					NumModelRequests: g.Requests,
				}
				res.Model, res.APIKeyID = g.dims(&rq)
				if rq.grouped("project_id") {
					res.ProjectID = ptr("proj_mock")
				}
				if kind == lineEmbeddings {
					res.Object = "organization.usage.embeddings.result"
				} else {
					res.OutputTokens, res.InputCachedTokens = ptr(g.OutputTokens), ptr(g.CachedTokens)
					res.InputAudioTokens, res.OutputAudioTokens = ptr(int64(0)), ptr(int64(0))
					if rq.grouped("batch") {
						res.Batch = ptr(g.batch)
					}
					if rq.grouped("service_tier") {
						res.ServiceTier = ptr("default")
					}
				}
				results = append(results, res)
			}
			return results
		}))
	}
}

// openAICosts serves GET /v1/organization/costs: line items are
// "<model>, input", "<model>, cached input" and "<model>, output".
func (s *Server) openAICosts(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, flavorOpenAI) {
		return
	}
	rq, ok := s.openAIRange(w, r.URL.Query(), 180, []string{"project_id", "line_item", "api_key_id"})
	if !ok {
		return
	}
	byItem := rq.grouped("line_item")
	if byItem { // a line item names its model
		rq.groupBy = append(rq.groupBy, "model")
	}
	lines := s.linesOf(lineCompletions, lineEmbeddings)
	writeReport(w, openAIPageOf(&rq, func(d int64) []any {
		results := []any{}
		for _, g := range groupLines(lines, d, &rq, "key_") {
			var in, cached, out int64
			for i := range g.lines {
				a, b, _, c := g.lines[i].cost(s.cfg.Prices[g.lines[i].model])
				in, cached, out = in+a, cached+b, out+c
			}
			_, keyID := g.dims(&rq)
			var project *string
			if rq.grouped("project_id") {
				project = ptr("proj_mock")
			}
			add := func(item *string, nano int64) {
				res := openAICostResult{Object: "organization.costs.result", LineItem: item, ProjectID: project, APIKeyID: keyID}
				res.Amount.Value, res.Amount.Currency = float64(nano)/1e9, "usd"
				results = append(results, res)
			}
			if !byItem {
				add(nil, in+cached+out)
				continue
			}
			add(ptr(g.model+", input"), in)
			if g.CachedTokens > 0 {
				add(ptr(g.model+", cached input"), cached)
			}
			if g.OutputTokens > 0 {
				add(ptr(g.model+", output"), out)
			}
		}
		return results
	}))
}

// anthropicRange reads starting_at (required) and ending_at (default now),
// RFC 3339.
func (s *Server) anthropicRange(w http.ResponseWriter, q url.Values, groups []string) (reportQuery, bool) {
	start, err := time.Parse(time.RFC3339Nano, q.Get("starting_at"))
	if err != nil {
		writeError(w, flavorAnthropic, http.StatusBadRequest, "starting_at: required, an RFC 3339 timestamp")
		return reportQuery{}, false
	}
	end := s.now()
	if v := q.Get("ending_at"); v != "" {
		if end, err = time.Parse(time.RFC3339Nano, v); err != nil {
			writeError(w, flavorAnthropic, http.StatusBadRequest, "ending_at: an RFC 3339 timestamp")
			return reportQuery{}, false
		}
	}
	rq, msg := parseQuery(q, start.Unix(), end.Unix(), 31, groups)
	if msg != "" {
		writeError(w, flavorAnthropic, http.StatusBadRequest, msg)
		return rq, false
	}
	return rq, true
}

type anthropicPage struct {
	Data     []anthropicBucket `json:"data"`
	HasMore  bool              `json:"has_more"`
	NextPage *string           `json:"next_page"`
}

type anthropicBucket struct {
	StartingAt string `json:"starting_at"`
	EndingAt   string `json:"ending_at"`
	Results    []any  `json:"results"`
}

type anthropicUsageResult struct {
	UncachedInputTokens int64 `json:"uncached_input_tokens"`
	CacheCreation       struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	} `json:"cache_creation"`
	CacheReadInputTokens int64 `json:"cache_read_input_tokens"`
	OutputTokens         int64 `json:"output_tokens"`
	ServerToolUse        struct {
		WebSearchRequests int64 `json:"web_search_requests"`
	} `json:"server_tool_use"`
	APIKeyID      *string `json:"api_key_id"`
	WorkspaceID   *string `json:"workspace_id"`
	Model         *string `json:"model"`
	ServiceTier   *string `json:"service_tier"`
	ContextWindow *string `json:"context_window"`
}

type anthropicCostResult struct {
	Currency      string  `json:"currency"`
	Amount        string  `json:"amount"` // cents, a decimal string
	WorkspaceID   *string `json:"workspace_id"`
	Description   *string `json:"description"`
	CostType      *string `json:"cost_type"`
	ContextWindow *string `json:"context_window"`
	Model         *string `json:"model"`
	ServiceTier   *string `json:"service_tier"`
	TokenType     *string `json:"token_type"`
}

func anthropicPageOf(rq *reportQuery, result func(dayStart int64) []any) anthropicPage {
	starts, next := rq.days()
	page := anthropicPage{Data: []anthropicBucket{}, HasMore: next != ""}
	if next != "" {
		page.NextPage = &next
	}
	for _, d := range starts {
		page.Data = append(page.Data, anthropicBucket{
			StartingAt: time.Unix(d, 0).UTC().Format(time.RFC3339),
			EndingAt:   time.Unix(d, 0).Add(day).UTC().Format(time.RFC3339),
			Results:    result(d),
		})
	}
	return page
}

// anthropicUsage serves GET /v1/organizations/usage_report/messages.
func (s *Server) anthropicUsage(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, flavorAnthropic) {
		return
	}
	rq, ok := s.anthropicRange(w, r.URL.Query(), []string{"api_key_id", "workspace_id", "model", "service_tier", "context_window", "inference_geo", "speed", "account_id", "service_account_id"})
	if !ok {
		return
	}
	lines := s.linesOf(lineMessages)
	writeReport(w, anthropicPageOf(&rq, func(d int64) []any {
		results := []any{}
		for _, g := range groupLines(lines, d, &rq, "apikey_") {
			res := anthropicUsageResult{
				UncachedInputTokens: g.InputTokens, CacheReadInputTokens: g.CachedTokens, OutputTokens: g.OutputTokens,
			}
			res.CacheCreation.Ephemeral5m = g.CacheCreationTokens
			res.Model, res.APIKeyID = g.dims(&rq)
			if rq.grouped("workspace_id") {
				res.WorkspaceID = ptr("wrkspc_mock")
			}
			if rq.grouped("service_tier") {
				res.ServiceTier = ptr("standard")
			}
			if rq.grouped("context_window") {
				res.ContextWindow = ptr("0-200k")
			}
			results = append(results, res)
		}
		return results
	}))
}

// cents writes nano-USD as cents in a decimal string (1 cent = 1e7 nano-USD).
func cents(nano int64) string {
	s := strconv.FormatInt(nano/10_000_000, 10)
	if frac := nano % 10_000_000; frac != 0 {
		s += strings.TrimRight(fmt.Sprintf(".%07d", frac), "0")
	}
	return s
}

// anthropicCosts serves GET /v1/organizations/cost_report: grouped by
// description, one item per model and token type.
func (s *Server) anthropicCosts(w http.ResponseWriter, r *http.Request) {
	if !s.admit(w, r, flavorAnthropic) {
		return
	}
	rq, ok := s.anthropicRange(w, r.URL.Query(), []string{"workspace_id", "description"})
	if !ok {
		return
	}
	byItem := rq.grouped("description")
	if byItem {
		rq.groupBy = append(rq.groupBy, "model")
	}
	lines := s.linesOf(lineMessages)
	writeReport(w, anthropicPageOf(&rq, func(d int64) []any {
		results := []any{}
		for _, g := range groupLines(lines, d, &rq, "apikey_") {
			var costs [4]int64
			for i := range g.lines {
				a, b, c, e := g.lines[i].cost(s.cfg.Prices[g.lines[i].model])
				costs[0], costs[1], costs[2], costs[3] = costs[0]+a, costs[1]+b, costs[2]+c, costs[3]+e
			}
			var ws *string
			if rq.grouped("workspace_id") {
				ws = ptr("wrkspc_mock")
			}
			if !byItem {
				results = append(results, anthropicCostResult{Currency: "USD", Amount: cents(costs[0] + costs[1] + costs[2] + costs[3]), WorkspaceID: ws})
				continue
			}
			for i, item := range [...]struct{ what, typ string }{
				{"Input Tokens", "uncached_input_tokens"},
				{"Cache Read Tokens", "cache_read_input_tokens"},
				{"Cache Write Tokens", "cache_creation.ephemeral_5m_input_tokens"},
				{"Output Tokens", "output_tokens"},
			} {
				if costs[i] == 0 && i > 0 {
					continue
				}
				results = append(results, anthropicCostResult{
					Currency: "USD", Amount: cents(costs[i]), WorkspaceID: ws,
					Description: ptr(g.model + " Usage - " + item.what), CostType: ptr("tokens"),
					ContextWindow: ptr("0-200k"), Model: ptr(g.model), ServiceTier: ptr("standard"), TokenType: ptr(item.typ),
				})
			}
		}
		return results
	}))
}
