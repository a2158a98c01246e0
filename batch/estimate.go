package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Errors of this package.
var (
	// ErrInput: a batch's input (file or requests) is malformed; the message
	// says which line and why, for the client.
	ErrInput = errors.New("batch: bad input")
	// ErrProvider: the provider's batch API failed.
	ErrProvider = errors.New("batch: the provider's batch API failed")
	// ErrUnauthorized: the Catalog knows no such key (or it expired).
	ErrUnauthorized = errors.New("batch: invalid API key")
	// ErrModelNotFound: the Catalog serves no such model.
	ErrModelNotFound = errors.New("batch: no such model")
	// ErrModelNotAllowed: the key may not use the model.
	ErrModelNotAllowed = errors.New("batch: model not allowed")
	// ErrNoDeployment: no deployment of the model speaks the batch's API
	// (or the one a file was uploaded to is gone).
	ErrNoDeployment = errors.New("batch: no deployment of the model serves this batch API")
)

// API is the client API a batch was made with.
type API string

// APIs.
const (
	APIOpenAI    API = "openai"    // Files + Batch APIs (OpenAI, Azure)
	APIAnthropic API = "anthropic" // Message Batches API
)

// Price is the batch price of a model: half of each token price (rounded
// down), the discount OpenAI and Anthropic give batch work. An unpriced
// model stays marked unpriced (refused under a strict budget).
func Price(p kernel.Price) kernel.Price {
	return kernel.Price{
		Input: p.Input / 2, CachedInput: p.CachedInput / 2, CacheWrite: p.CacheWrite / 2, Output: p.Output / 2, Reasoning: p.Reasoning / 2,
		Unpriced: p.Unpriced,
	}
}

// Estimate is what admission needs of a batch: its model and its worst case
// (every line's prompt bytes bound its input tokens, its max tokens its
// output), to reserve at the batch price on the key's hierarchy.
type Estimate struct {
	Model       string
	Lines       int
	PromptBytes int64
	MaxTokens   int64
	// Unbounded counts the lines without max_tokens, each bounded by the
	// model's default (the caller adds Unbounded × default to MaxTokens).
	Unbounded int
}

// AdmitRequest is the reservation of the estimate: one admission for the
// whole batch, at the batch price of price (the model's), living for lease
// (the batch's completion window and a margin). A line without max tokens
// is bounded by defaultMaxTokens.
func (e Estimate) AdmitRequest(id string, scopes []kernel.Scope, price kernel.Price, defaultMaxTokens int64, lease time.Duration) *kernel.AdmitRequest {
	return &kernel.AdmitRequest{
		ID: id, Scopes: scopes, Model: e.Model, PromptBytes: e.PromptBytes,
		MaxTokens: e.MaxTokens + int64(e.Unbounded)*defaultMaxTokens, DefaultMaxTokens: defaultMaxTokens,
		Price: Price(price), Lease: lease,
	}
}

type lineBody struct {
	Model               string `json:"model"`
	MaxTokens           *int64 `json:"max_tokens"`
	MaxCompletionTokens *int64 `json:"max_completion_tokens"`
	MaxOutputTokens     *int64 `json:"max_output_tokens"`
}

func (e *Estimate) add(where string, body json.RawMessage) error {
	var b lineBody
	if err := json.Unmarshal(body, &b); err != nil {
		return fmt.Errorf("%w: %s: body is not a JSON object", ErrInput, where)
	}
	switch {
	case b.Model == "":
		return fmt.Errorf("%w: %s: body.model is required", ErrInput, where)
	case e.Model == "":
		e.Model = b.Model
	case b.Model != e.Model:
		return fmt.Errorf("%w: %s: every line must use the same model (%q, not %q)", ErrInput, where, e.Model, b.Model)
	}
	e.Lines++
	e.PromptBytes += int64(len(body))
	switch m := firstOf(b.MaxCompletionTokens, b.MaxTokens, b.MaxOutputTokens); {
	case m == nil:
		e.Unbounded++
	case *m < 0:
		return fmt.Errorf("%w: %s: max tokens must not be negative", ErrInput, where)
	default:
		e.MaxTokens += *m
	}
	return nil
}

func firstOf(ps ...*int64) *int64 {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

// EstimateOpenAI reads a Batch API input file (JSONL of {custom_id, method,
// url, body}) whose lines all go to endpoint.
func EstimateOpenAI(jsonl []byte, endpoint string) (Estimate, error) {
	var e Estimate
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(jsonl))
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		where := fmt.Sprintf("line %d", n)
		switch err := json.Unmarshal(sc.Bytes(), &l); {
		case err != nil:
			return e, fmt.Errorf("%w: %s: not JSON: %w", ErrInput, where, err)
		case l.CustomID == "":
			return e, fmt.Errorf("%w: %s: custom_id is required", ErrInput, where)
		case seen[l.CustomID]:
			return e, fmt.Errorf("%w: %s: custom_id %q is not unique", ErrInput, where, l.CustomID)
		case l.Method != "POST" || l.URL != endpoint:
			return e, fmt.Errorf("%w: %s: method must be POST and url %s", ErrInput, where, endpoint)
		}
		seen[l.CustomID] = true
		if err := e.add(where, l.Body); err != nil {
			return e, err
		}
	}
	if err := sc.Err(); err != nil {
		return e, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if e.Lines == 0 {
		return e, fmt.Errorf("%w: the input file has no request", ErrInput)
	}
	return e, nil
}

// EstimateAnthropic reads a Message Batches create body ({requests:
// [{custom_id, params}]}).
func EstimateAnthropic(body []byte) (Estimate, error) {
	var e Estimate
	var req struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return e, fmt.Errorf("%w: not JSON: %w", ErrInput, err)
	}
	if len(req.Requests) == 0 {
		return e, fmt.Errorf("%w: requests: Field required", ErrInput)
	}
	seen := map[string]bool{}
	for i, r := range req.Requests {
		where := fmt.Sprintf("requests.%d", i)
		if r.CustomID == "" || seen[r.CustomID] {
			return e, fmt.Errorf("%w: %s: custom_id must be given and unique", ErrInput, where)
		}
		seen[r.CustomID] = true
		if err := e.add(where, r.Params); err != nil {
			return e, err
		}
	}
	return e, nil
}
