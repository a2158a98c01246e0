package reconcile

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// Errors of this package.
var (
	// ErrUnsupported: the provider's type has no usage report Tollgate reads.
	ErrUnsupported = errors.New("reconcile: the provider type has no usage report (openai and anthropic do)")
	// ErrNoAdminCredential: the provider has no admin credential for its reports.
	ErrNoAdminCredential = errors.New("reconcile: the provider has no admin credential (set one with --admin-credential-env)")
	// ErrProvider: the provider's report API answered with an error.
	ErrProvider = errors.New("reconcile: the provider's report API failed")
	// ErrRange: the date range is empty or too long.
	ErrRange = errors.New("reconcile: bad date range")
)

// Day is 24 hours; reports are compared per UTC day.
const Day = 24 * time.Hour

// MaxRange is the longest range one reconciliation reads.
const MaxRange = 92 * Day

// Totals are what one side (the ledger, or the provider) says of one cell.
type Totals struct {
	Requests    int64        `json:"requests"`
	Input       int64        `json:"input_tokens"`        // uncached input tokens
	CachedInput int64        `json:"cached_input_tokens"` // cache reads
	CacheWrite  int64        `json:"cache_write_tokens"`  // cache creation
	Output      int64        `json:"output_tokens"`       // reasoning included
	Cost        kernel.Money `json:"cost"`
}

// Tokens is every token of the totals.
func (t Totals) Tokens() int64 { return t.Input + t.CachedInput + t.CacheWrite + t.Output }

func (t *Totals) add(o Totals) {
	t.Requests += o.Requests
	t.Input += o.Input
	t.CachedInput += o.CachedInput
	t.CacheWrite += o.CacheWrite
	t.Output += o.Output
	t.Cost += o.Cost
}

// Line is what a provider reports for one UTC day and one of its models.
type Line struct {
	Day   time.Time `json:"day"`   // UTC midnight
	Model string    `json:"model"` // the provider's model name; "" when the report names none
	Totals
	// Keys are the tokens per provider API key id, when the report gives them.
	Keys map[string]int64 `json:"keys,omitempty"`
}

// Report is a provider's usage and cost report over a range of days.
type Report struct {
	// RequestsReported: the report counts requests (OpenAI does, Anthropic
	// does not).
	RequestsReported bool
	Lines            []Line // by day, then model
	index            map[cellKey]int
}

type cellKey struct {
	day   int64
	model string
}

// line returns the line of (day, model), adding it when new.
func (r *Report) line(day time.Time, model string) *Line {
	day = day.UTC().Truncate(Day)
	k := cellKey{day.Unix(), model}
	if r.index == nil {
		r.index = map[cellKey]int{}
	}
	i, ok := r.index[k]
	if !ok {
		i = len(r.Lines)
		r.index[k] = i
		r.Lines = append(r.Lines, Line{Day: day, Model: model})
	}
	return &r.Lines[i]
}

// addUsage adds the tokens and requests of one report result.
func (r *Report) addUsage(day time.Time, model, keyID string, t Totals) {
	l := r.line(day, model)
	t.Cost = 0
	l.add(t)
	if keyID != "" {
		if l.Keys == nil {
			l.Keys = map[string]int64{}
		}
		l.Keys[keyID] += t.Tokens()
	}
}

// addCost adds an amount of one report result.
func (r *Report) addCost(day time.Time, model string, cost kernel.Money) {
	r.line(day, model).Cost += cost
}

func (r *Report) sort() {
	slices.SortFunc(r.Lines, func(a, b Line) int {
		return cmp.Or(a.Day.Compare(b.Day), strings.Compare(a.Model, b.Model))
	})
	r.index = nil
}

// Source fetches a provider's report for the UTC days in [from, to).
type Source interface {
	Fetch(ctx context.Context, from, to time.Time) (*Report, error)
}

// Endpoint is where and how a provider's report API is reached.
type Endpoint struct {
	// BaseURL is the provider's base URL, its version included
	// (https://api.openai.com/v1, https://api.anthropic.com/v1).
	BaseURL string
	// AdminKey is the provider's admin key (OpenAI admin key, Anthropic
	// Admin API key); never logged.
	AdminKey string
	// Version is Anthropic's anthropic-version ("" for 2023-06-01).
	Version string
	// Client is the HTTP client (nil: one with a 60 s timeout).
	Client *http.Client
}

// NewSource returns the report client of a provider type.
func NewSource(typ store.ProviderType, e Endpoint) (Source, error) {
	if e.AdminKey == "" {
		return nil, ErrNoAdminCredential
	}
	if e.Client == nil {
		e.Client = &http.Client{Timeout: 60 * time.Second}
	}
	e.BaseURL = strings.TrimSuffix(e.BaseURL, "/")
	switch typ {
	case store.ProviderOpenAI:
		return &openAI{e}, nil
	case store.ProviderAnthropic:
		return &anthropic{e}, nil
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupported, typ)
	}
}

// get fetches one page of a report into out, with the headers of the
// provider; a non-2xx answer becomes an ErrProvider error with the
// provider's own message.
func (e *Endpoint) get(ctx context.Context, path string, q url.Values, headers map[string]string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.BaseURL+path+"?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrProvider, err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: GET %s: %w", ErrProvider, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%w: GET %s: %w", ErrProvider, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var msg struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(body, &msg)
		return fmt.Errorf("%w: GET %s: %d %s", ErrProvider, path, resp.StatusCode, msg.Error.Message)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("%w: GET %s: decoding the report: %w", ErrProvider, path, err)
	}
	return nil
}

// CheckRange validates a reconciliation range: whole UTC days, from before
// to, at most MaxRange.
func CheckRange(from, to time.Time) error {
	switch {
	case !from.Equal(from.UTC().Truncate(Day)) || !to.Equal(to.UTC().Truncate(Day)):
		return fmt.Errorf("%w: from and to must be UTC days (YYYY-MM-DD)", ErrRange)
	case !to.After(from):
		return fmt.Errorf("%w: to must be after from", ErrRange)
	case to.Sub(from) > MaxRange:
		return fmt.Errorf("%w: at most %d days at once", ErrRange, MaxRange/Day)
	}
	return nil
}
