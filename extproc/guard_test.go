package extproc

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tollgate-ai/tollgate/translate/translatetest"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/guard"
)

// testGuards resolves every request to set (the gateway's adapter, in
// gateway/guard.go, is the production one; this is its test twin, as
// extproc's tests cannot import the gateway).
type testGuards struct{ set guard.Set }

func (g testGuards) Guardrails(*Principal, string) Guardrails { return g }
func (g testGuards) Names() []string {
	var n []string
	for _, x := range g.set {
		n = append(n, x.Name)
	}
	return n
}
func (g testGuards) At(st GuardStage) bool { return g.set.At(guard.Stage(st)) }
func (g testGuards) Check(ctx context.Context, st GuardStage, body []byte) GuardVerdict {
	v := g.set.Check(ctx, guard.Stage(st), body, true)
	out := GuardVerdict{Blocked: v.Blocked, Body: v.Text}
	for _, h := range v.Hits {
		out.Hits = append(out.Hits, testHit(h))
	}
	return out
}

func (g testGuards) Redactor() GuardRedactor {
	if r := g.set.NewRedactor(0); r != nil {
		return testRedactor{r}
	}
	return nil
}

type testRedactor struct{ r *guard.Redactor }

func (r testRedactor) Push(seg []byte) ([][]byte, *GuardHit) { return testBlock(r.r.Push(seg)) }
func (r testRedactor) Flush() ([][]byte, *GuardHit)          { return testBlock(r.r.Flush()) }
func (r testRedactor) Hits() []GuardHit {
	var out []GuardHit
	for _, h := range r.r.Hits() {
		out = append(out, testHit(h))
	}
	return out
}

func testBlock(segs [][]byte, h *guard.Hit) ([][]byte, *GuardHit) {
	if h == nil {
		return segs, nil
	}
	x := testHit(*h)
	return segs, &x
}

func testHit(h guard.Hit) GuardHit {
	return GuardHit{Guardrail: h.Guardrail, Kind: h.Kind, Action: h.Action.String(), Types: h.Types, Reason: h.Reason, Failed: h.Failed, Message: h.Message()}
}

func guardEnv(t *testing.T, specs ...guard.Spec) *testEnv {
	e := anthropicEnv(t)
	var set guard.Set
	for _, sp := range specs {
		g, err := guard.Compile(sp)
		require.NoError(t, err)
		set = append(set, g)
	}
	e.proc.guards = testGuards{set}
	return e
}

var (
	piiBlock   = guard.Spec{Name: "no-pii", Kind: guard.KindPII, Action: "block", On: []string{"pre"}}
	piiRedact  = guard.Spec{Name: "pii", Kind: guard.KindPII, Action: "redact", On: []string{"pre", "post", "stream"}}
	keysRedact = guard.Spec{Name: "keys", Kind: guard.KindSecrets, Action: "redact", On: []string{"post", "stream"}}
	keysBlock  = guard.Spec{Name: "keys", Kind: guard.KindSecrets, Action: "block", On: []string{"stream"}}
)

func TestGuardPreBlockCostsNothing(t *testing.T) {
	e := guardEnv(t, piiBlock)
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"mail me at jane@example.com"}]}`
	resp := e.do(t, post("/v1/chat/completions", clientKey, body), up.upstream)
	require.Equal(t, http.StatusBadRequest, resp.Status)
	require.Nil(t, resp.Forwarded, "nothing reaches the provider")
	require.Empty(t, e.acct.Admits(), "nothing is admitted: no reservation, no charge")
	require.Equal(t, "no-pii", hget(resp.Headers, hdrGuardrails))
	var got struct {
		Error struct {
			Message string  `json:"message"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &got))
	require.Equal(t, codeGuardrail, *got.Error.Code)
	require.Equal(t, `Blocked by guardrail "no-pii": the text contains EMAIL.`, got.Error.Message)
	require.NotContains(t, e.logs.String(), "jane@example.com")
	require.Contains(t, e.logs.String(), `"guardrail":"no-pii"`)

	// Anthropic's Messages API: its own error shape.
	body = `{"model":"claude-sonnet","max_tokens":10,"messages":[{"role":"user","content":"SSN 123-45-6789"}]}`
	resp = e.do(t, post("/v1/messages", clientKey, body), up.upstream)
	require.Equal(t, http.StatusBadRequest, resp.Status)
	require.JSONEq(t, `{"type":"error","error":{"type":"invalid_request_error","message":"Blocked by guardrail \"no-pii\": the text contains SSN."}}`, string(resp.Body))
	require.Empty(t, e.acct.Admits())

	// A clean request passes, and says which guardrails it went through.
	resp = e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), up.upstream)
	require.Equal(t, http.StatusOK, resp.Status)
	require.Equal(t, "no-pii", hget(resp.Headers, hdrGuardrails))
}

func TestGuardPreRedact(t *testing.T) {
	e := guardEnv(t, piiRedact)
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"card 4111 1111 1111 1111, ok?"}]}`, `"content":"card [CREDIT_CARD], ok?"`},
		{"/v1/embeddings", `{"model":"embed","input":["call +44 20 7946 0958"]}`, `"input":["call [PHONE]"]`},
		{"/v1/completions", `{"model":"instruct","prompt":"ip 10.0.0.1"}`, `"prompt":"ip [IP_ADDRESS]"`},
	} {
		up.resp = jsonResponse(200, chatResponse)
		if tc.path == "/v1/embeddings" {
			up.resp = jsonResponse(200, `{"object":"list","data":[],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}`)
		}
		e.do(t, post(tc.path, clientKey, tc.body), up.upstream)
		fwd := up.last(t)
		require.Contains(t, string(fwd.Body), tc.want, tc.path)
		require.True(t, json.Valid(fwd.Body))
		require.Equal(t, strconv.Itoa(len(fwd.Body)), hget(fwd.Headers, "content-length"))
	}
}

func TestGuardPostRedact(t *testing.T) {
	e := guardEnv(t, keysRedact)
	reply := strings.Replace(chatResponse, `"Hello!"`, `"your key: AKIAIOSFODNN7EXAMPLE"`, 1)
	up := &recorder{resp: jsonResponse(200, reply)}
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), up.upstream)
	require.Equal(t, http.StatusOK, resp.Status)
	require.Contains(t, string(resp.Body), `"your key: [AWS_KEY]"`)
	require.Equal(t, strconv.Itoa(len(resp.Body)), hget(resp.Headers, "content-length"))
	require.Equal(t, "keys", hget(resp.Headers, hdrGuardrails))
	require.Len(t, e.acct.records, 1, "the reply is still settled")
}

// chatStream is a streamed chat completion whose deltas are words.
func chatStream(words ...string) string {
	var b strings.Builder
	for _, w := range words {
		b.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":` + strconv.Quote(w) + `},"finish_reason":null}]}` + "\n\n")
	}
	b.WriteString("data: " + translatetest.StreamUsageEvent + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.String()
}

// deltas concatenates a chat stream's delta contents, checking every event.
func deltas(t *testing.T, body []byte) (string, []string) {
	var text strings.Builder
	var errs []string
	for _, ev := range strings.Split(string(body), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m struct {
			Choices []struct{ Delta struct{ Content string } }
			Error   *struct{ Message string }
		}
		require.NoError(t, json.Unmarshal([]byte(data), &m), data)
		if m.Error != nil {
			errs = append(errs, m.Error.Message)
		}
		for _, c := range m.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	return text.String(), errs
}

func TestGuardStreamRedactSplit(t *testing.T) {
	e := guardEnv(t, keysRedact)
	key := "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	body := chatStream("Here", " is ", "the key ", key[:12], key[12:], " — keep it safe.")
	for _, size := range []int{7, 64, 4096} {
		up := &recorder{resp: sseResponse(body, size)}
		req := post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
		resp := e.do(t, req, up.upstream)
		require.Equal(t, http.StatusOK, resp.Status)
		text, errs := deltas(t, resp.Body)
		require.Empty(t, errs)
		require.Equal(t, "Here is the key [API_KEY] — keep it safe.", text, "chunks of %d", size)
		require.NotContains(t, string(resp.Body), key[:12])
		require.Equal(t, "keys", hget(resp.Headers, hdrGuardrails))
	}
	require.Len(t, e.acct.records, 3, "every stream settled")
	require.Contains(t, e.logs.String(), `"types":["API_KEY"]`)
}

func TestGuardStreamBlock(t *testing.T) {
	e := guardEnv(t, keysBlock)
	key := "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	up := &recorder{resp: sseResponse(chatStream("fine so far. ", key[:10], key[10:], " more"), 16)}
	req := post("/v1/chat/completions", clientKey, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	resp := e.do(t, req, up.upstream)
	text, errs := deltas(t, resp.Body)
	require.Equal(t, []string{`Blocked by guardrail "keys": the text contains API_KEY.`}, errs)
	require.NotContains(t, text, "sk-proj")
	require.NotContains(t, string(resp.Body), "[DONE]", "nothing after the error event")
	require.Len(t, e.acct.records, 1, "the stream is still settled")
}

func TestGuardStreamAnthropic(t *testing.T) {
	e := guardEnv(t, piiRedact)
	sse := translatetest.AnthropicSSE(
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"write to jane.doe@exa"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"mple.com today"}}`,
		`{"type":"content_block_stop","index":0}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":6}}`,
		`{"type":"message_stop"}`,
	)
	up := &recorder{resp: sseResponse(sse, 5)}
	req := post("/v1/messages", clientKey, `{"model":"claude-sonnet","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	resp := e.do(t, req, up.upstream)
	require.Equal(t, http.StatusOK, resp.Status)
	require.NotContains(t, string(resp.Body), "jane")
	var text strings.Builder
	for _, ev := range strings.Split(string(resp.Body), "\n\n") {
		_, data, ok := strings.Cut(ev, "data: ")
		if !ok {
			continue
		}
		var m struct {
			Type  string
			Delta struct{ Text string }
		}
		require.NoError(t, json.Unmarshal([]byte(data), &m))
		text.WriteString(m.Delta.Text)
	}
	require.Equal(t, "write to [EMAIL] today", text.String())
	require.Len(t, e.acct.records, 1)
}

func TestGuardsNoneNoChange(t *testing.T) {
	e := newTestEnv(t)
	up := &recorder{resp: jsonResponse(200, chatResponse)}
	resp := e.do(t, post("/v1/chat/completions", clientKey, testPromptBody), up.upstream)
	require.Empty(t, hget(resp.Headers, hdrGuardrails))
}

func hget(h extprocfilter.Headers, k string) string {
	v, _ := h.Get(k)
	return v
}

// BenchmarkGuardPre4KiB is the processor's work for one non-streamed chat
// request with a 4 KiB prompt, without guardrails and with built-in pre
// guardrails (docs/guardrails.md, bench/README.md): cpu-µs/op compares.
func BenchmarkGuardPre4KiB(b *testing.B) {
	para := strings.Repeat("The gateway forwards each request to the provider its routing strategy chose, records the usage it reports, and settles the cost. ", 33)
	body, err := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []map[string]string{{"role": "user", "content": para[:4096]}}})
	require.NoError(b, err)
	hdrs := reqHeadersMsg(len(body), false)
	bodyM := bodyMsg(body)
	for _, bc := range []struct {
		name  string
		specs []guard.Spec
	}{
		{"none", nil},
		{"pii", []guard.Spec{{Name: "pii", Kind: guard.KindPII, Action: "redact", On: []string{"pre"}}}},
		{"pii+secrets", []guard.Spec{
			{Name: "pii", Kind: guard.KindPII, Action: "redact", On: []string{"pre"}},
			{Name: "secrets", Kind: guard.KindSecrets, Action: "block", On: []string{"pre"}},
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := New(newCatalog(), benchAccountant{})
			if bc.specs != nil {
				var set guard.Set
				for _, sp := range bc.specs {
					g, err := guard.Compile(sp)
					require.NoError(b, err)
					set = append(set, g)
				}
				p.guards = testGuards{set}
			}
			ctx := context.Background()
			b.ReportAllocs()
			start := selfCPU(b)
			for b.Loop() {
				s := &stream{p: p}
				for _, m := range []*extprocv3ProcessingRequest{hdrs, bodyM, benchRespHdrs, benchRespBody} {
					r := s.handle(ctx, m)
					if r == nil || r.GetImmediateResponse() != nil {
						b.Fatalf("unexpected reply %v", r)
					}
					s.takeLent(r).release()
				}
				s.finish(ctx)
			}
			b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}
