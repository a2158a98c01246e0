package translate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
)

// anthropicCase is one golden case of testdata/anthropic/in: a client request
// through one translator, and optionally a provider response (JSON or a
// recorded SSE byte stream) back through it.
type anthropicCase struct {
	API      API          `json:"api"`
	Provider ProviderType `json:"provider"`
	Target   Target       `json:"target"`
	Clamp    int64        `json:"clamp"`
	// AnthropicVersion is the client's anthropic-version header.
	AnthropicVersion string          `json:"anthropic_version"`
	Request          json.RawMessage `json:"request"`
	// Status and Response: a complete provider response (status 0 = 200).
	Status   int             `json:"status"`
	Response json.RawMessage `json:"response"`
	// Stream: a provider SSE byte stream, verbatim.
	Stream string `json:"stream"`
}

// anthropicGolden is what testdata/anthropic/out holds for a case.
type anthropicGolden struct {
	Path    string      `json:"path"`
	Headers [][2]string `json:"headers"`
	// Body is the exact upstream body, indented when JSON; "<unchanged>" when
	// the client's is kept.
	Body json.RawMessage `json:"body"`
	// Reply is the gateway's own answer when the request does not go upstream.
	Reply     json.RawMessage `json:"reply,omitempty"`
	Client    json.RawMessage `json:"client,omitempty"`     // client body of a JSON response or error
	ClientSSE string          `json:"client_sse,omitempty"` // client bytes of a stream
	Usage     *kernel.Usage   `json:"usage,omitempty"`
	Reported  *bool           `json:"reported,omitempty"`
}

// runAnthropicCase runs one case and returns its golden record.
func runAnthropicCase(t *testing.T, tc *anthropicCase) anthropicGolden {
	t.Helper()
	in, err := ParseRequest(tc.API, tc.Request)
	require.NoError(t, err)
	in.ClampMaxTokens, in.AnthropicVersion = tc.Clamp, tc.AnthropicVersion
	tr := NewTranslator(tc.API, tc.Provider)
	require.NotNil(t, tr, "no translator for %s × %s", tc.API, tc.Provider)
	out, err := tr.Request(in, &tc.Target)
	require.NoError(t, err)
	require.Equal(t, string(tc.Request), string(in.Body), "client body must not be modified")
	g := anthropicGolden{Path: out.Path, Headers: out.Headers, Body: json.RawMessage(`"<unchanged>"`)}
	if out.Body != nil {
		require.True(t, json.Valid(out.Body), "upstream body is not JSON: %s", out.Body)
		g.Body = out.Body
	}
	if out.Reply != nil {
		require.True(t, json.Valid(out.Reply), "reply is not JSON: %s", out.Reply)
		g.Reply = out.Reply
	}
	goldenReply(t, &g, tr, tc.Status, tc.Response, tc.Stream, func() Translator {
		tr2 := NewTranslator(tc.API, tc.Provider)
		in2, err := ParseRequest(tc.API, tc.Request)
		require.NoError(t, err)
		in2.ClampMaxTokens, in2.AnthropicVersion = tc.Clamp, tc.AnthropicVersion
		_, err = tr2.Request(in2, &tc.Target)
		require.NoError(t, err)
		return tr2
	})
	return g
}

// feedStream feeds b to tr in two chunks split at offset at (whole when at<0),
// then the end of stream, and returns the concatenated output.
func feedStream(t *testing.T, tr Translator, b []byte, at int) []byte {
	t.Helper()
	parts := [][]byte{b}
	if at >= 0 {
		parts = [][]byte{b[:at:at], b[at:]}
	}
	var got []byte
	for _, p := range parts {
		out, err := tr.StreamChunk(p, false)
		require.NoError(t, err)
		got = append(got, out...)
	}
	out, err := tr.StreamChunk(nil, true)
	require.NoError(t, err)
	return append(got, out...)
}

// TestAnthropicGolden runs every testdata/anthropic/in case and compares with
// testdata/anthropic/out (go test -run TestAnthropicGolden -update rewrites).
func TestAnthropicGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/anthropic/in/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	now := anthropicNow
	rnow := responsesNow
	anthropicNow = func() time.Time { return time.Unix(1_750_000_000, 0) }
	responsesNow = anthropicNow
	t.Cleanup(func() { anthropicNow, responsesNow = now, rnow })
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			var tc anthropicCase
			require.NoError(t, json.Unmarshal(raw, &tc))
			g := runAnthropicCase(t, &tc)
			enc, err := json.MarshalIndent(g, "", "  ")
			require.NoError(t, err)
			enc = append(enc, '\n')
			golden := filepath.Join("testdata/anthropic/out", name+".json")
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, enc, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test -run TestAnthropicGolden -update")
			require.Equal(t, string(want), string(enc))
		})
	}
}

// goldenReply records in g what the client gets for the provider's answer:
// the error body, the translated JSON body, or the translated stream, which
// must be the same bytes and usage for every split of the provider's bytes
// (fresh returns a translator that has seen the request).
func goldenReply(t *testing.T, g *anthropicGolden, tr Translator, status int, response json.RawMessage, stream string, fresh func() Translator) {
	t.Helper()
	switch {
	case status >= 400:
		g.Client = tr.Error(status, response)
		require.True(t, json.Valid(g.Client), "error body is not JSON: %s", g.Client)
	case len(response) > 0:
		body, u, err := tr.Response(response)
		require.NoError(t, err)
		require.True(t, json.Valid(body), "client body is not JSON: %s", body)
		g.Client, g.Usage = body, &u
	case stream != "":
		whole := feedStream(t, tr, []byte(stream), -1)
		u, rep := tr.StreamUsage()
		g.ClientSSE, g.Usage, g.Reported = string(whole), &u, &rep
		for i := 0; i <= len(stream); i++ {
			tr2 := fresh()
			got := feedStream(t, tr2, []byte(stream), i)
			require.Equal(t, string(whole), string(got), "split at byte %d", i)
			u2, rep2 := tr2.StreamUsage()
			require.Equal(t, u, u2, "split at byte %d", i)
			require.Equal(t, rep, rep2, "split at byte %d", i)
		}
	}
}

// TestTranslatorTableGolden: every pair of the translators table has at least
// one golden case in testdata/{translate,anthropic,gemini,bedrock}/in, and every
// golden case names a pair of the table.
func TestTranslatorTableGolden(t *testing.T) {
	covered := map[translatorKey]bool{}
	for _, dir := range []string{"testdata/translate/in", "testdata/anthropic/in", "testdata/gemini/in", "testdata/bedrock/in"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, file := range files {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			var pair struct {
				API      API          `json:"api"`
				Provider ProviderType `json:"provider"`
			}
			require.NoError(t, json.Unmarshal(raw, &pair), file)
			k := translatorKey{pair.API, pair.Provider}
			require.Contains(t, translators, k, "%s names a pair the table does not have", file)
			covered[k] = true
		}
	}
	for k := range translators {
		assert.True(t, covered[k], "no golden case for %s × %s", k.api, k.provider)
	}
}
