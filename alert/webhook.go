package alert

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Headers of a webhook delivery.
const (
	HeaderSignature = "x-tollgate-signature"
	HeaderTimestamp = "x-tollgate-timestamp"
	HeaderEvent     = "x-tollgate-event"
)

// Webhook posts events to a URL: JSON (the Event), signed when it has a
// secret, retried with exponential backoff on network errors, 408, 429 and
// 5xx. NewSlack makes one that posts Slack's incoming-webhook payload.
type Webhook struct {
	URL    string
	Secret []byte // HMAC-SHA256 key; empty: unsigned
	// Label names the sink in delivery states (default "webhook").
	Label  string
	Client *http.Client // nil: a client with a 10 s timeout
	// Attempts (default 5), the first Backoff (default 500 ms, doubling) and
	// its cap (default 30 s).
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Sleep waits between attempts (default: a timer, or the context's end).
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time
	// Format renders the body (default: the Event as JSON).
	Format func(e Event) ([]byte, error)
}

// NewSlack returns a sink posting to a Slack-compatible incoming webhook
// ({"text": …}), unsigned.
func NewSlack(url string) *Webhook {
	return &Webhook{URL: url, Label: "slack", Format: slackPayload}
}

func slackPayload(e Event) ([]byte, error) {
	return json.Marshal(struct {
		Text string `json:"text"`
	}{Text: ":rotating_light: Tollgate " + string(e.Kind) + ": " + e.Message})
}

// Name implements Sink.
func (w *Webhook) Name() string {
	if w.Label != "" {
		return w.Label
	}
	return "webhook"
}

var defaultClient = &http.Client{Timeout: 10 * time.Second}

// Send implements Sink.
func (w *Webhook) Send(ctx context.Context, e Event) (int, error) {
	format := w.Format
	if format == nil {
		format = func(e Event) ([]byte, error) { return json.Marshal(e) }
	}
	body, err := format(e)
	if err != nil {
		return 0, fmt.Errorf("alert: encode %s: %w", e.ID, err)
	}
	attempts, backoff, maxBackoff := w.Attempts, w.Backoff, w.MaxBackoff
	if attempts <= 0 {
		attempts = 5
	}
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	if maxBackoff <= 0 {
		maxBackoff = 30 * time.Second
	}
	var last error
	for i := 1; i <= attempts; i++ {
		retry, err := w.post(ctx, e.ID, body)
		if err == nil {
			return i, nil
		}
		last = err
		if !retry || i == attempts {
			return i, fmt.Errorf("alert: %s to %s after %d attempts: %w", e.ID, w.Name(), i, last)
		}
		if err := w.sleep(ctx, backoff); err != nil {
			return i, fmt.Errorf("alert: %s to %s: %w (last: %w)", e.ID, w.Name(), err, last)
		}
		backoff = min(2*backoff, maxBackoff)
	}
	return attempts, last
}

// post makes one attempt; retry says whether another may succeed.
func (w *Webhook) post(ctx context.Context, id string, body []byte) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set(HeaderEvent, id)
	if len(w.Secret) > 0 {
		now := time.Now
		if w.Now != nil {
			now = w.Now
		}
		ts := strconv.FormatInt(now().Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Sign(w.Secret, ts, body))
	}
	c := w.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return ctx.Err() == nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return false, nil
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		return true, fmt.Errorf("status %d", resp.StatusCode)
	default:
		return false, fmt.Errorf("status %d (not retried)", resp.StatusCode)
	}
}

func (w *Webhook) sleep(ctx context.Context, d time.Duration) error {
	if w.Sleep != nil {
		return w.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sign is the x-tollgate-signature of body sent at ts (Unix seconds).
func Sign(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// ErrBadSignature is returned by Verify.
var ErrBadSignature = errors.New("alert: bad webhook signature")

// Verify checks a delivery's signature and that its timestamp is within
// maxAge of now (either way): what a receiver does.
func Verify(secret []byte, ts, signature string, body []byte, now time.Time, maxAge time.Duration) error {
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: timestamp %q", ErrBadSignature, ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxAge || d < -maxAge {
		return fmt.Errorf("%w: timestamp %s is %s away", ErrBadSignature, ts, d)
	}
	if !hmac.Equal([]byte(Sign(secret, ts, body)), []byte(signature)) {
		return ErrBadSignature
	}
	return nil
}

// SinkOf is the sink of a stored alert sink (store.AlertSink) whose secret
// is already unsealed: a webhook (signed when secret is set) or Slack.
func SinkOf(kind, name, url string, secret []byte) (Sink, error) {
	switch kind {
	case "webhook", "":
		return &Webhook{URL: url, Secret: secret, Label: name}, nil
	case "slack":
		s := NewSlack(url)
		s.Label = name
		return s, nil
	default:
		return nil, fmt.Errorf("alert: sink %s: unknown kind %q (webhook or slack)", name, kind)
	}
}
