package guard

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustCompile(t testing.TB, sp Spec) *Guardrail {
	t.Helper()
	g, err := Compile(sp)
	require.NoError(t, err)
	return g
}

func TestCheckRedactJSONStaysValid(t *testing.T) {
	pii := mustCompile(t, Spec{Name: "pii", Kind: KindPII, Action: "redact", On: []string{"pre"}})
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"mail\njane@example.com\tor call +1 415 555 2671, card 4111111111111111 \u00e9"}]}`)
	v := Set{pii}.Check(context.Background(), Pre, body, true)
	require.False(t, v.Blocked)
	require.Equal(t, []string{"pii"}, v.Applied)
	require.True(t, json.Valid(v.Text), "%s", v.Text)
	var got struct {
		Messages []struct{ Content string }
	}
	require.NoError(t, json.Unmarshal(v.Text, &got))
	require.Equal(t, "mail\n[EMAIL]\tor call [PHONE], card [CREDIT_CARD] é", got.Messages[0].Content)
	require.Equal(t, []string{TypeCreditCard, TypeEmail, TypePhone}, v.Hits[0].Types)
	require.NotContains(t, v.Hits[0].Reason, "jane")
}

func TestCheckKeysAndNamesAreNotText(t *testing.T) {
	w := mustCompile(t, Spec{Name: "w", Kind: KindWords, Action: "block", Words: []string{"content"}})
	v := Set{w}.Check(context.Background(), Pre, []byte(`{"content":"fine","model":"x"}`), true)
	require.False(t, v.Blocked)
	v = Set{w}.Check(context.Background(), Pre, []byte(`{"content":"the Content here"}`), true)
	require.True(t, v.Blocked)
	h, _ := v.Block()
	require.Equal(t, `Blocked by guardrail "w": the text contains BLOCKED_WORD.`, h.Message())
}

func TestCheckOrderAndStages(t *testing.T) {
	red := mustCompile(t, Spec{Name: "secrets", Kind: KindSecrets, Action: "redact", On: []string{"pre", "post"}})
	blk := mustCompile(t, Spec{Name: "no-keys", Kind: KindSecrets, Action: "block", On: []string{"pre"}})
	size := mustCompile(t, Spec{Name: "size", Kind: KindSize, Action: "block", MaxBytes: 10, On: []string{"post"}})
	text := []byte("my key AKIAIOSFODNN7EXAMPLE")
	// Redacted first, the blocking guardrail then sees nothing.
	v := Set{red, blk}.Check(context.Background(), Pre, text, false)
	require.False(t, v.Blocked)
	require.Equal(t, "my key [AWS_KEY]", string(v.Text))
	require.Equal(t, []string{"secrets", "no-keys"}, v.Applied)
	v = Set{blk, red}.Check(context.Background(), Pre, text, false)
	require.True(t, v.Blocked)
	require.Nil(t, v.Text)
	v = Set{red, blk, size}.Check(context.Background(), Post, text, false)
	require.True(t, v.Blocked, "size runs post only")
	require.Equal(t, []string{"secrets", "size"}, v.Applied)
	v = Set{blk}.Check(context.Background(), Post, text, false)
	require.Empty(t, v.Applied)
}

func TestCompileErrors(t *testing.T) {
	for name, sp := range map[string]Spec{
		"no name":         {Kind: KindPII, Action: "block"},
		"kind":            {Name: "x", Kind: "nope", Action: "block"},
		"action":          {Name: "x", Kind: KindPII, Action: "shout"},
		"stage":           {Name: "x", Kind: KindPII, Action: "block", On: []string{"later"}},
		"type":            {Name: "x", Kind: KindPII, Action: "block", Types: []string{"DNA"}},
		"size redact":     {Name: "x", Kind: KindSize, Action: "redact", MaxBytes: 3},
		"size zero":       {Name: "x", Kind: KindSize, Action: "block"},
		"words empty":     {Name: "x", Kind: KindWords, Action: "block"},
		"bad regexp":      {Name: "x", Kind: KindWords, Action: "block", Patterns: []string{"("}},
		"webhook url":     {Name: "x", Kind: KindWebhook, Action: "block"},
		"webhook stream":  {Name: "x", Kind: KindWebhook, Action: "block", URL: "http://127.0.0.1:1", On: []string{"stream"}},
		"moderate redact": {Name: "x", Kind: KindModeration, Action: "redact", URL: "http://127.0.0.1:1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(sp)
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
}

func TestWordsAndPatterns(t *testing.T) {
	g := mustCompile(t, Spec{Name: "w", Kind: KindWords, Action: "redact", Words: []string{"Project Falcon"}, Patterns: []string{`ACME-\d{4}`}})
	v := Set{g}.Check(context.Background(), Pre, []byte("about project falcon and ACME-1234, not projectfalconry"), false)
	require.Equal(t, "about [BLOCKED_WORD] and [BLOCKED_WORD], not projectfalconry", string(v.Text))
}

func TestRedactorSplitAcrossSegments(t *testing.T) {
	g := mustCompile(t, Spec{Name: "secrets", Kind: KindSecrets, Action: "redact", On: []string{"stream"}})
	r := Set{g}.NewRedactor(32)
	key := "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	var out []string
	push := func(s string) {
		segs, blk := r.Push([]byte(s))
		require.Nil(t, blk)
		for _, b := range segs {
			out = append(out, string(b))
		}
	}
	push("Here is the key: ")
	push(key[:10])
	push(key[10:])
	push(" and some more text after it, long enough to pass the window.")
	segs, _ := r.Flush()
	for _, b := range segs {
		out = append(out, string(b))
	}
	require.Len(t, out, 4, "one output per segment")
	require.Equal(t, "Here is the key: [API_KEY] and some more text after it, long enough to pass the window.", strings.Join(out, ""))
	require.Equal(t, "[API_KEY]", out[1])
	require.Empty(t, out[2])
	require.Len(t, r.Hits(), 1)
}

func TestRedactorHoldsOnlyTheWindow(t *testing.T) {
	g := mustCompile(t, Spec{Name: "pii", Kind: KindPII, Action: "redact", On: []string{"stream"}})
	r := Set{g}.NewRedactor(16)
	segs, _ := r.Push([]byte("short"))
	require.Empty(t, segs, "within the window: held")
	segs, _ = r.Push([]byte(" and now well past the window"))
	require.Len(t, segs, 1, "the first segment is out of the window: released")
	require.Equal(t, "short", string(segs[0]))
	require.Equal(t, 1, r.Pending())
}

func TestRedactorBlock(t *testing.T) {
	g := mustCompile(t, Spec{Name: "no-pii", Kind: KindPII, Action: "block", On: []string{"stream"}})
	r := Set{g}.NewRedactor(0)
	_, blk := r.Push([]byte("write to jane@exa"))
	require.Nil(t, blk)
	_, blk = r.Push([]byte("mple.com now"))
	require.NotNil(t, blk)
	require.Equal(t, "no-pii", blk.Guardrail)
	require.Equal(t, []string{TypeEmail}, blk.Types)
}

func TestRedactorEscapes(t *testing.T) {
	g := mustCompile(t, Spec{Name: "pii", Kind: KindPII, Action: "redact", On: []string{"stream"}})
	r := Set{g}.NewRedactor(0)
	r.Push([]byte(`line\njane@example.com\"`))
	segs, _ := r.Flush()
	require.Equal(t, `line\n[EMAIL]\"`, string(segs[0]))
}

func TestWebhook(t *testing.T) {
	var got WebhookRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if json.NewDecoder(r.Body).Decode(&got) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch {
		case strings.Contains(got.Content, "forbidden"):
			_ = json.NewEncoder(w).Encode(WebhookReply{Verdict: "block", Reason: "policy 7"})
		case strings.Contains(got.Content, "rewrite"):
			c := `{"messages":[{"role":"user","content":"rewritten"}]}`
			_ = json.NewEncoder(w).Encode(WebhookReply{Verdict: "rewrite", Content: &c})
		case strings.Contains(got.Content, "slow"):
			time.Sleep(200 * time.Millisecond)
		default:
			_ = json.NewEncoder(w).Encode(WebhookReply{Verdict: "allow"})
		}
	}))
	defer srv.Close()
	mk := func(action string, open bool) Set {
		return Set{mustCompile(t, Spec{Name: "hook", Kind: KindWebhook, Action: action, URL: srv.URL, Timeout: 50 * time.Millisecond, FailOpen: open})}
	}
	ctx := context.Background()
	v := mk("block", false).Check(ctx, Pre, []byte(`{"messages":[{"content":"fine"}]}`), true)
	require.False(t, v.Blocked)
	require.Equal(t, "pre", got.Stage)
	require.Equal(t, "application/json", got.ContentType)
	v = mk("block", false).Check(ctx, Pre, []byte(`{"messages":[{"content":"forbidden"}]}`), true)
	require.True(t, v.Blocked)
	h, _ := v.Block()
	require.Equal(t, "policy 7", h.Reason)
	v = mk("redact", false).Check(ctx, Pre, []byte(`{"messages":[{"content":"rewrite me"}]}`), true)
	require.JSONEq(t, `{"messages":[{"role":"user","content":"rewritten"}]}`, string(v.Text))
	// A timeout: fail closed blocks, fail open passes and says so.
	v = mk("block", false).Check(ctx, Pre, []byte(`"slow"`), true)
	require.True(t, v.Blocked)
	require.True(t, v.Hits[0].Failed)
	v = mk("block", true).Check(ctx, Pre, []byte(`"slow"`), true)
	require.False(t, v.Blocked)
	require.True(t, v.Hits[0].Failed)
	require.Equal(t, ActionLog, v.Hits[0].Action)
}

func TestWebhookDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	for _, open := range []bool{false, true} {
		g := mustCompile(t, Spec{Name: "hook", Kind: KindWebhook, Action: "block", URL: url, FailOpen: open})
		v := Set{g}.Check(context.Background(), Pre, []byte("hello"), false)
		require.Equal(t, !open, v.Blocked)
		require.True(t, v.Hits[0].Failed)
	}
}

func TestModeration(t *testing.T) {
	var req ModerationRequest
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if r.URL.Path != "/v1/moderations" || json.NewDecoder(r.Body).Decode(&req) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		res := ModerationResult{Categories: map[string]bool{"violence": false}}
		for _, in := range req.Input {
			if strings.Contains(in, "attack") {
				res.Flagged, res.Categories["violence"] = true, true
			}
		}
		_ = json.NewEncoder(w).Encode(ModerationReply{ID: "modr-1", Model: req.Model, Results: []ModerationResult{res}})
	}))
	defer srv.Close()
	g := mustCompile(t, Spec{Name: "mod", Kind: KindModeration, Action: "block", URL: srv.URL + "/", APIKey: "k"})
	v := Set{g}.Check(context.Background(), Pre, []byte(`{"model":"m","messages":[{"role":"user","content":"plan an attack"}]}`), true)
	require.True(t, v.Blocked)
	require.Equal(t, "Bearer k", auth)
	require.Equal(t, "omni-moderation-latest", req.Model)
	require.Equal(t, []string{"plan an attack"}, req.Input)
	h, _ := v.Block()
	require.Equal(t, "flagged by moderation (violence)", h.Reason)
	v = Set{g}.Check(context.Background(), Pre, []byte(`{"messages":[{"content":"hello"}]}`), true)
	require.False(t, v.Blocked)
}
