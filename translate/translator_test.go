package translate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/translate/translatetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/*/out")

type translateCase struct {
	API      API             `json:"api"`
	Provider ProviderType    `json:"provider"`
	Target   Target          `json:"target"`
	Body     json.RawMessage `json:"body"`
	Clamp    int64           `json:"clamp"`
}

type translateGolden struct {
	Path    string      `json:"path"`
	Headers [][2]string `json:"headers"`
	Remove  []string    `json:"remove"`
	// Body is the exact upstream body; "<unchanged>" when the client's is kept.
	Body string `json:"body"`
}

// TestTranslateRequestGolden runs every testdata/translate/in case through its
// translator and compares the upstream request with testdata/translate/out.
func TestTranslateRequestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/translate/in/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			var tc translateCase
			require.NoError(t, json.Unmarshal(raw, &tc))
			in, err := ParseRequest(tc.API, tc.Body)
			require.NoError(t, err)
			in.ClampMaxTokens = tc.Clamp
			tr := NewTranslator(tc.API, tc.Provider)
			require.NotNil(t, tr)
			out, err := tr.Request(in, &tc.Target)
			require.NoError(t, err)
			got := translateGolden{Path: out.Path, Headers: out.Headers, Remove: out.Remove, Body: "<unchanged>"}
			if out.Body != nil {
				got.Body = string(out.Body)
				require.True(t, json.Valid(out.Body), "upstream body is not JSON: %s", out.Body)
			}
			enc, err := json.MarshalIndent(got, "", "  ")
			require.NoError(t, err)
			enc = append(enc, '\n')
			golden := filepath.Join("testdata/translate/out", name+".json")
			if *update {
				require.NoError(t, os.WriteFile(golden, enc, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -run TestTranslateRequestGolden -update")
			require.Equal(t, string(want), string(enc))
			require.Equal(t, string(tc.Body), string(in.Body), "client body must not be modified")
		})
	}
}

// TestTranslateRequestSemantics checks what the golden files must say, by
// decoding the upstream body, so a wrong -update cannot slip through.
func TestTranslateRequestSemantics(t *testing.T) {
	tests := []struct {
		name     string
		api      API
		provider ProviderType
		body     string
		clamp    int64
		check    func(t *testing.T, m map[string]any, out *Outbound)
	}{
		{
			name: "stream forces include_usage", api: APIChat, provider: ProviderOpenAI,
			body: `{"model":"pub","stream":true,"stream_options":{"include_usage":false}}`,
			check: func(t *testing.T, m map[string]any, _ *Outbound) {
				require.Equal(t, map[string]any{"include_usage": true}, m["stream_options"])
				require.Equal(t, "prov", m["model"])
			},
		},
		{
			name: "non-stream leaves stream_options alone", api: APIChat, provider: ProviderOpenAI,
			body: `{"model":"pub"}`,
			check: func(t *testing.T, m map[string]any, _ *Outbound) {
				require.NotContains(t, m, "stream_options")
			},
		},
		{
			name: "clamp both bounds", api: APIChat, provider: ProviderAzure, clamp: 7,
			body: `{"model":"pub","max_tokens":100,"max_completion_tokens":null}`,
			check: func(t *testing.T, m map[string]any, out *Outbound) {
				require.InDelta(t, 7, m["max_tokens"], 0)
				require.Nil(t, m["max_completion_tokens"], "a null bound stays null when another is set")
				require.Equal(t, "/openai/deployments/prov/chat/completions?api-version=2024-10-21", out.Path)
				require.Equal(t, [][2]string{{"api-key", "secret-key-0001"}}, out.Headers)
			},
		},
		{
			name: "clamp null only bound", api: APICompletions, provider: ProviderOpenAI, clamp: 9,
			body: `{"model":"pub","max_tokens":null}`,
			check: func(t *testing.T, m map[string]any, out *Outbound) {
				require.InDelta(t, 9, m["max_tokens"], 0)
				require.Equal(t, "/v1/completions", out.Path)
				require.Equal(t, [][2]string{{"authorization", "Bearer secret-key-0001"}}, out.Headers)
			},
		},
		{
			name: "embeddings ignore clamp and stream", api: APIEmbeddings, provider: ProviderOpenAI, clamp: 9,
			body: `{"model":"pub","input":"x","stream":true}`,
			check: func(t *testing.T, m map[string]any, _ *Outbound) {
				require.NotContains(t, m, "max_tokens")
				require.NotContains(t, m, "stream_options")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseRequest(tt.api, []byte(tt.body))
			require.NoError(t, err)
			in.ClampMaxTokens = tt.clamp
			target := &Target{Model: "pub", Deployment: "d", Provider: tt.provider, BasePath: "/v1", APIKey: "secret-key-0001", ProviderModel: "prov"}
			if tt.provider == ProviderAzure {
				target.BasePath = ""
			}
			out, err := NewTranslator(tt.api, tt.provider).Request(in, target)
			require.NoError(t, err)
			body := out.Body
			if body == nil {
				body = in.Body
			}
			var m map[string]any
			require.NoError(t, json.Unmarshal(body, &m))
			tt.check(t, m, out)
		})
	}
}

func TestOpenAIResponseUsage(t *testing.T) {
	tests := []struct {
		name string
		body string
		want kernel.Usage
		err  bool
	}{
		{
			name: "chat with cached and reasoning",
			body: `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],
				"usage":{"prompt_tokens":1486,"completion_tokens":651,"total_tokens":2137,
				"prompt_tokens_details":{"cached_tokens":1408,"audio_tokens":0},
				"completion_tokens_details":{"reasoning_tokens":512,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`,
			want: kernel.Usage{Input: 78, CachedInput: 1408, Output: 139, Reasoning: 512},
		},
		{
			name: "plain",
			body: `{"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29}}`,
			want: kernel.Usage{Input: 19, Output: 10},
		},
		{
			name: "embeddings",
			body: `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`,
			want: kernel.Usage{Input: 8},
		},
		{
			name: "details null",
			body: `{"usage":{"prompt_tokens":5,"completion_tokens":3,"prompt_tokens_details":null,"completion_tokens_details":null}}`,
			want: kernel.Usage{Input: 5, Output: 3},
		},
		{name: "no usage", body: `{"choices":[]}`, err: true},
		{name: "not json", body: `<html>`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTranslator(APIChat, ProviderOpenAI)
			out, u, err := tr.Response([]byte(tt.body))
			require.True(t, SameBytes(out, []byte(tt.body)) || bytes.Equal(out, []byte(tt.body)))
			if tt.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, u)
		})
	}
}

func TestOpenAIStreamUsage(t *testing.T) {
	want := kernel.Usage{Input: 10, CachedInput: 2, Output: 4, Reasoning: 1}
	for _, size := range []int{1, 2, 3, 7, 50, 1000, len(translatetest.OpenAIStream)} {
		tr := NewTranslator(APIChat, ProviderAzure)
		b := []byte(translatetest.OpenAIStream)
		for len(b) > 0 {
			n := min(size, len(b))
			out, err := tr.StreamChunk(b[:n], false)
			require.NoError(t, err)
			require.True(t, SameBytes(out, b[:n]), "OpenAI streams pass unchanged")
			b = b[n:]
		}
		_, err := tr.StreamChunk(nil, true)
		require.NoError(t, err)
		u, reported := tr.StreamUsage()
		require.True(t, reported, "chunk size %d", size)
		require.Equal(t, want, u, "chunk size %d", size)
	}
}

func TestOpenAIStreamEstimate(t *testing.T) {
	// Cut before the usage event: only the text is known.
	cut := strings.Index(translatetest.OpenAIStream, `"choices":[],"usage"`)
	tr := NewTranslator(APIChat, ProviderOpenAI)
	_, err := tr.StreamChunk([]byte(translatetest.OpenAIStream[:cut]), false)
	require.NoError(t, err)
	u, reported := tr.StreamUsage()
	require.False(t, reported)
	require.Equal(t, EstimateTokens(int64(len("Hello there, friend"))), u.Output)
	require.Positive(t, u.Output)
}

func TestUpstreamError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   openAIErrorDetail
	}{
		{
			name: "openai rate limit", status: 429,
			body: `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want: openAIErrorDetail{Message: "Rate limit reached", Type: "requests", Code: ptr("rate_limit_exceeded")},
		},
		{
			name: "openai bad key echoes the key", status: 401,
			body: `{"error":{"message":"Incorrect API key provided: sk-proj-abc***wxyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			want: openAIErrorDetail{Message: "the provider rejected the gateway's credentials for this deployment", Type: "invalid_request_error", Code: ptr("upstream_auth_error")},
		},
		{
			name: "azure content filter", status: 400,
			body: `{"error":{"message":"The response was filtered","type":null,"param":"prompt","code":"content_filter","status":400}}`,
			want: openAIErrorDetail{Message: "The response was filtered", Type: "invalid_request_error", Param: ptr("prompt"), Code: ptr("content_filter")},
		},
		{
			name: "message containing the provider key", status: 400,
			body: `{"error":{"message":"bad request for key secret-provider-key-9876"}}`,
			want: openAIErrorDetail{Message: "bad request for key [redacted]", Type: "invalid_request_error"},
		},
		{
			name: "numeric code", status: 500,
			body: `{"error":{"message":"boom","code":500}}`,
			want: openAIErrorDetail{Message: "boom", Type: "server_error", Code: ptr("500")},
		},
		{
			name: "vllm flat", status: 400,
			body: `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","code":400}`,
			want: openAIErrorDetail{Message: "max_tokens is too large", Type: "invalid_request_error"},
		},
		{
			name: "html from a proxy", status: 502,
			body: `<html>Bad Gateway</html>`,
			want: openAIErrorDetail{Message: "<html>Bad Gateway</html>", Type: "server_error"},
		},
		{
			name: "empty", status: 503, body: ``,
			want: openAIErrorDetail{Message: "upstream returned HTTP 503", Type: "server_error"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTranslator(APIChat, ProviderOpenAI)
			_, err := tr.Request(&Inbound{API: APIChat, Body: []byte(`{"model":"m"}`)},
				&Target{ProviderModel: "m", APIKey: "secret-provider-key-9876"})
			require.NoError(t, err)
			out := tr.Error(tt.status, []byte(tt.body))
			var got openAIErrorBody
			require.NoError(t, json.Unmarshal(out, &got))
			require.Equal(t, tt.want, got.Error)
			require.NotContains(t, string(out), "secret-provider-key-9876")
			require.NotContains(t, string(out), "sk-proj")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestStripUsageEvent: whatever the chunking, the output is the input without
// the usage-only event and with the client's model, and usage is still read.
func TestStripUsageEvent(t *testing.T) {
	usageEvent := "data: " + translatetest.StreamUsageEvent + "\r\n\r\n"
	stream := strings.ReplaceAll(translatetest.OpenAIStream, "\n", "\r\n")
	cut := strings.Index(stream, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"gpt-4o\",\"choices\":[],")
	require.Positive(t, cut)
	// The reply names the client's model ("m"), not the upstream's.
	want := strings.ReplaceAll(stream[:cut]+stream[cut+len(usageEvent):], `"model":"gpt-4o"`, `"model":"m"`)
	for i := 0; i <= len(stream); i += 7 {
		for _, j := range []int{i, min(i+1, len(stream)), min(i+150, len(stream)), len(stream)} {
			in, err := ParseRequest(APIChat, []byte(`{"model":"m","stream":true}`))
			require.NoError(t, err)
			tr := NewTranslator(APIChat, ProviderOpenAI)
			_, err = tr.Request(in, &Target{ProviderModel: "m"})
			require.NoError(t, err)
			var got []byte
			for _, c := range []string{stream[:i], stream[i:j], stream[j:]} {
				out, err := tr.StreamChunk([]byte(c), false)
				require.NoError(t, err)
				got = append(got, out...)
			}
			out, err := tr.StreamChunk(nil, true)
			require.NoError(t, err)
			got = append(got, out...)
			require.Equal(t, want, string(got), "split at %d, %d", i, j)
			u, reported := tr.StreamUsage()
			require.True(t, reported)
			require.Equal(t, int64(10), u.Input)
		}
	}
}

// FuzzStreamChunks: the client receives the same bytes however the provider's
// stream is split, and exactly the input when no usage-only event is removed.
func FuzzStreamChunks(f *testing.F) {
	f.Add([]byte(translatetest.OpenAIStream), uint8(5), uint8(90), false)
	f.Add([]byte(strings.ReplaceAll(translatetest.OpenAIStream, "\n", "\r")), uint8(1), uint8(200), false)
	f.Add([]byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\r\n\r\n: c\n\ndata: x"), uint8(31), uint8(2), true)
	run := func(t *testing.T, asked bool, parts ...[]byte) ([]byte, kernel.Usage, bool) {
		body := `{"model":"m","stream":true}`
		if asked {
			body = `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`
		}
		in, err := ParseRequest(APIChat, []byte(body))
		require.NoError(t, err)
		tr := NewTranslator(APIChat, ProviderOpenAI)
		_, err = tr.Request(in, &Target{ProviderModel: "m"})
		require.NoError(t, err)
		var got []byte
		for i, p := range parts {
			out, _ := tr.StreamChunk(p, i == len(parts)-1)
			got = append(got, out...)
		}
		u, rep := tr.StreamUsage()
		return got, u, rep
	}
	f.Fuzz(func(t *testing.T, b []byte, s1, s2 uint8, asked bool) {
		i := min(int(s1), len(b))
		j := min(i+int(s2), len(b))
		whole, u1, r1 := run(t, asked, b, nil)
		split, u2, r2 := run(t, asked, b[:i], b[i:j], b[j:], nil)
		require.Equal(t, string(whole), string(split))
		require.Equal(t, u1, u2)
		require.Equal(t, r1, r2)
		if asked {
			require.Equal(t, string(b), string(whole), "nothing removed when the client asked for usage")
		}
		require.LessOrEqual(t, len(whole), len(b))
	})
}
