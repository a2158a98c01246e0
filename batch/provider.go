package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Provider is the provider side of polling a batch.
type Provider interface {
	// Poll reports whether the batch ended (completed, cancelled, expired or
	// failed) and, when it did, every line that ran.
	Poll(ctx context.Context, p *Pending) (ended bool, lines []Line, err error)
}

// ProviderFunc adapts a function to Provider.
type ProviderFunc func(ctx context.Context, p *Pending) (bool, []Line, error)

// Poll calls f.
func (f ProviderFunc) Poll(ctx context.Context, p *Pending) (bool, []Line, error) { return f(ctx, p) }

// Endpoint is a provider's batch API: its base URL (version included, e.g.
// https://api.openai.com/v1) and API key.
type Endpoint struct {
	BaseURL string
	APIKey  string
	Version string // Anthropic's anthropic-version ("" for 2023-06-01)
	// Azure: an Azure OpenAI resource, whose Files and Batch APIs are
	// OpenAI's under /openai/v1 (its v1 API: no api-version), with the key
	// in an api-key header. BaseURL is then the resource's endpoint
	// (https://NAME.openai.azure.com, /openai or /openai/v1 included or not).
	Azure  bool
	Client *http.Client
}

// openAIBase is the base of the OpenAI-shaped Files and Batch APIs:
// BaseURL, or an Azure resource's /openai/v1.
func (e *Endpoint) openAIBase() string {
	base := strings.TrimSuffix(e.BaseURL, "/")
	if !e.Azure {
		return base
	}
	switch {
	case strings.HasSuffix(base, "/openai/v1"):
		return base
	case strings.HasSuffix(base, "/openai"):
		return base + "/v1"
	}
	return base + "/openai/v1"
}

// openAIAuth is the credential header of the OpenAI-shaped APIs.
func (e *Endpoint) openAIAuth() (name, value string) {
	if e.Azure {
		return "api-key", e.APIKey
	}
	return "Authorization", "Bearer " + e.APIKey
}

// NewProvider returns the poller of a batch API.
func NewProvider(api API, e Endpoint) (Provider, error) {
	if e.Client == nil {
		e.Client = &http.Client{Timeout: 5 * time.Minute}
	}
	e.BaseURL = strings.TrimSuffix(e.BaseURL, "/")
	switch api {
	case APIOpenAI:
		return &openAI{e}, nil
	case APIAnthropic:
		return &anthropic{e}, nil
	}
	return nil, fmt.Errorf("batch: unknown API %q", api)
}

func (e *Endpoint) get(ctx context.Context, url string, headers map[string]string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProvider, err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrProvider, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %w", ErrProvider, req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: GET %s: %d %s", ErrProvider, req.URL.Path, resp.StatusCode, bytes.TrimSpace(body))
	}
	return body, nil
}

type openAI struct{ Endpoint }

func (o *openAI) Poll(ctx context.Context, p *Pending) (bool, []Line, error) {
	k, v := o.openAIAuth()
	auth := map[string]string{k: v}
	raw, err := o.get(ctx, o.openAIBase()+"/batches/"+p.ID, auth)
	if err != nil {
		return false, nil, err
	}
	var b struct {
		Status       string  `json:"status"`
		OutputFileID *string `json:"output_file_id"`
		ErrorFileID  *string `json:"error_file_id"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, nil, fmt.Errorf("%w: batch %s: %w", ErrProvider, p.ID, err)
	}
	switch b.Status {
	case "completed", "cancelled", "expired", "failed":
	default: // validating, in_progress, finalizing, cancelling
		return false, nil, nil
	}
	var lines []Line
	for _, f := range []*string{b.OutputFileID, b.ErrorFileID} {
		if f == nil || *f == "" {
			continue
		}
		content, err := o.get(ctx, o.openAIBase()+"/files/"+*f+"/content", auth)
		if err != nil {
			return false, nil, err
		}
		ls, err := ParseOpenAIOutput(bytes.NewReader(content))
		if err != nil {
			return false, nil, err
		}
		lines = append(lines, ls...)
	}
	return true, lines, nil
}

type anthropic struct{ Endpoint }

func (a *anthropic) Poll(ctx context.Context, p *Pending) (bool, []Line, error) {
	version := a.Version
	if version == "" {
		version = "2023-06-01"
	}
	headers := map[string]string{"x-api-key": a.APIKey, "anthropic-version": version}
	raw, err := a.get(ctx, a.BaseURL+"/messages/batches/"+p.ID, headers)
	if err != nil {
		return false, nil, err
	}
	var b struct {
		ProcessingStatus string  `json:"processing_status"`
		ResultsURL       *string `json:"results_url"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, nil, fmt.Errorf("%w: batch %s: %w", ErrProvider, p.ID, err)
	}
	if b.ProcessingStatus != "ended" {
		return false, nil, nil
	}
	// The results are read from the provider's base URL, never from a URL
	// the answer names: the key goes to the provider's host only.
	content, err := a.get(ctx, a.BaseURL+"/messages/batches/"+p.ID+"/results", headers)
	if err != nil {
		return false, nil, err
	}
	lines, err := ParseAnthropicResults(bytes.NewReader(content))
	return err == nil, lines, err
}
