package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// httpDoer is the HTTP client of the external checks.
type httpDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// DefaultTimeout bounds an external check without a timeout of its own.
const DefaultTimeout = 2 * time.Second

// maxExternalReply bounds what an external check may answer.
const maxExternalReply = 4 << 20

func newExternal(kind string, sp Spec, client httpDoer) (checker, error) {
	if sp.URL == "" || !strings.HasPrefix(sp.URL, "http://") && !strings.HasPrefix(sp.URL, "https://") {
		return nil, fmt.Errorf("%w: %s needs an http(s) url", ErrInvalid, kind)
	}
	if client == nil {
		client = http.DefaultClient
	}
	timeout := sp.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if kind == KindModeration {
		if a, _ := ParseAction(sp.Action); a == ActionRedact {
			return nil, fmt.Errorf("%w: moderation can block or log, not redact", ErrInvalid)
		}
		model := sp.Model
		if model == "" {
			model = "omni-moderation-latest"
		}
		base := strings.TrimSuffix(sp.URL, "/")
		if !strings.HasSuffix(base, "/v1") { // a provider's base URL usually ends in /v1
			base += "/v1"
		}
		return &moderation{url: base + "/moderations", key: sp.APIKey, model: model, timeout: timeout, client: client}, nil
	}
	return &webhook{url: sp.URL, timeout: timeout, client: client}, nil
}

// post sends body as JSON and decodes a 200 reply into out.
func post(ctx context.Context, client httpDoer, timeout time.Duration, url, bearer string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(io.LimitReader(resp.Body, maxExternalReply))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: status %d", ErrUnavailable, resp.StatusCode)
	}
	if err := json.Unmarshal(rb, out); err != nil {
		return fmt.Errorf("%w: reply: %w", ErrUnavailable, err)
	}
	return nil
}

// WebhookRequest is what a webhook guardrail is sent (POST, JSON).
type WebhookRequest struct {
	Guardrail string `json:"guardrail"`
	// Stage: "pre" (the request body) or "post" (the reply body).
	Stage string `json:"stage"`
	// ContentType: "application/json" when Content is the JSON body as sent
	// (or received), "text/plain" otherwise.
	ContentType string `json:"content_type"`
	Content     string `json:"content"`
}

// WebhookReply is what a webhook answers (200, JSON).
type WebhookReply struct {
	// Verdict: "allow", "block" or "rewrite" (Content replaces the text; a
	// JSON content must stay valid JSON).
	Verdict string   `json:"verdict"`
	Reason  string   `json:"reason,omitempty"`
	Content *string  `json:"content,omitempty"`
	Types   []string `json:"types,omitempty"`
}

type webhook struct {
	url     string
	timeout time.Duration
	client  httpDoer
}

func (w *webhook) check(ctx context.Context, g *Guardrail, stage Stage, text []byte, isJSON bool) (extResult, error) {
	req := WebhookRequest{Guardrail: g.Name, Stage: stage.String(), ContentType: "text/plain", Content: string(text)}
	if isJSON {
		req.ContentType = "application/json"
	}
	var rep WebhookReply
	if err := post(ctx, w.client, w.timeout, w.url, "", req, &rep); err != nil {
		return extResult{}, err
	}
	switch strings.ToLower(rep.Verdict) {
	case "allow":
		return extResult{}, nil
	case "block":
		reason := rep.Reason
		if reason == "" {
			reason = "refused by the webhook"
		}
		return extResult{block: true, reason: reason, types: rep.Types}, nil
	case "rewrite":
		if rep.Content == nil {
			return extResult{}, fmt.Errorf("%w: rewrite without content", ErrUnavailable)
		}
		out := []byte(*rep.Content)
		if isJSON && !json.Valid(out) {
			return extResult{}, fmt.Errorf("%w: rewritten content is not JSON", ErrUnavailable)
		}
		return extResult{text: out, reason: rep.Reason, types: rep.Types}, nil
	}
	return extResult{}, fmt.Errorf("%w: unknown verdict %q", ErrUnavailable, rep.Verdict)
}

// ModerationRequest is OpenAI's POST /v1/moderations body (text inputs).
type ModerationRequest struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

// ModerationReply is OpenAI's moderation object (the fields read).
type ModerationReply struct {
	ID      string             `json:"id"`
	Model   string             `json:"model"`
	Results []ModerationResult `json:"results"`
}

// ModerationResult is one input's result.
type ModerationResult struct {
	Flagged        bool               `json:"flagged"`
	Categories     map[string]bool    `json:"categories"`
	CategoryScores map[string]float64 `json:"category_scores"`
}

type moderation struct {
	url, key, model string
	timeout         time.Duration
	client          httpDoer
}

func (m *moderation) check(ctx context.Context, _ *Guardrail, _ Stage, text []byte, isJSON bool) (extResult, error) {
	input := []string{string(text)}
	if isJSON {
		input = jsonStrings(text)
		if len(input) == 0 {
			return extResult{}, nil
		}
	}
	var rep ModerationReply
	if err := post(ctx, m.client, m.timeout, m.url, m.key, ModerationRequest{Model: m.model, Input: input}, &rep); err != nil {
		return extResult{}, err
	}
	if len(rep.Results) == 0 {
		return extResult{}, fmt.Errorf("%w: no results", ErrUnavailable)
	}
	var cats []string
	flagged := false
	for _, r := range rep.Results {
		flagged = flagged || r.Flagged
		for c, on := range r.Categories {
			if on && !slices.Contains(cats, c) {
				cats = append(cats, c)
			}
		}
	}
	if !flagged {
		return extResult{}, nil
	}
	slices.Sort(cats)
	reason := "flagged by moderation"
	if len(cats) > 0 {
		reason += " (" + strings.Join(cats, ", ") + ")"
	}
	return extResult{block: true, reason: reason, types: cats}, nil
}

// notText: members whose strings are names, not text.
var notText = map[string]bool{"model": true, "role": true, "type": true, "id": true, "object": true, "tool_call_id": true, "name": true, "finish_reason": true, "stop_reason": true}

// jsonStrings returns the string values of a JSON document that carry text.
func jsonStrings(b []byte) []string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return []string{string(b)}
	}
	var out []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case string:
			if !notText[key] && strings.TrimSpace(x) != "" {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case map[string]any:
			for k, e := range x {
				walk(k, e)
			}
		}
	}
	walk("", v)
	return out
}
