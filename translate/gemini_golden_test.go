package translate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// geminiCase is an anthropicCase with the client's :path, from which the
// Gemini API's endpoints take the model, the method and alt=sse.
type geminiCase struct {
	anthropicCase
	Path string `json:"path"`
	// Form is a multipart request's body (base64 in the case; boundary
	// "golden"), in place of Request.
	Form []byte `json:"form"`
}

// geminiInbound parses a case's request as the processor would.
func geminiInbound(t *testing.T, tc *geminiCase) *Inbound {
	t.Helper()
	var in *Inbound
	var err error
	switch {
	case len(tc.Form) > 0:
		in, err = ParseMultipartUnits(tc.API, "multipart/form-data; boundary=golden", tc.Form, true, int64(len(tc.Form)))
		require.NoError(t, err)
	case tc.Path != "":
		in, err = ParseGeminiRequest(tc.Path, tc.Request)
		require.NoError(t, err)
		require.Equal(t, tc.API, in.API, "the path %s names the case's API", tc.Path)
	default:
		in, err = ParseRequest(tc.API, tc.Request)
		require.NoError(t, err)
	}
	in.ClampMaxTokens, in.AnthropicVersion = tc.Clamp, tc.AnthropicVersion
	return in
}

// runGeminiCase runs one case through its translator (runAnthropicCase's
// steps, with the Gemini API's parsing) and returns its golden record.
func runGeminiCase(t *testing.T, tc *geminiCase) anthropicGolden {
	t.Helper()
	in := geminiInbound(t, tc)
	tr := NewTranslator(tc.API, tc.Provider)
	require.NotNil(t, tr, "no translator for %s × %s", tc.API, tc.Provider)
	out, err := tr.Request(in, &tc.Target)
	require.NoError(t, err)
	client := []byte(tc.Request)
	if len(tc.Form) > 0 {
		client = tc.Form
	}
	require.Equal(t, string(client), string(in.Body), "client body must not be modified")
	g := anthropicGolden{Path: out.Path, Headers: out.Headers, Body: json.RawMessage(`"<unchanged>"`)}
	switch {
	case out.Reply != nil:
		g.Client = out.Reply
		return g
	case out.Body != nil:
		require.True(t, json.Valid(out.Body), "upstream body is not JSON: %s", out.Body)
		g.Body = out.Body
	}
	goldenReply(t, &g, tr, tc.Status, tc.Response, tc.Stream, func() Translator {
		tr2 := NewTranslator(tc.API, tc.Provider)
		_, err := tr2.Request(geminiInbound(t, tc), &tc.Target)
		require.NoError(t, err)
		return tr2
	})
	return g
}

// TestGeminiGolden runs every testdata/gemini/in case and compares with
// testdata/gemini/out (go test -run TestGeminiGolden -update rewrites).
func TestGeminiGolden(t *testing.T) {
	runGoldenDir(t, "testdata/gemini", func(t *testing.T, raw []byte) *geminiCase {
		var tc geminiCase
		require.NoError(t, json.Unmarshal(raw, &tc))
		return &tc
	})
}

// runGoldenDir runs every dir/in case (read by load) through runGeminiCase
// and compares its record with dir/out (rewritten with -update).
func runGoldenDir(t *testing.T, dir string, load func(t *testing.T, raw []byte) *geminiCase) {
	files, err := filepath.Glob(filepath.Join(dir, "in", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	now, rnow := anthropicNow, responsesNow
	anthropicNow = func() time.Time { return time.Unix(1_750_000_000, 0) }
	responsesNow = anthropicNow
	t.Cleanup(func() { anthropicNow, responsesNow = now, rnow })
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			g := runGeminiCase(t, load(t, raw))
			enc, err := json.MarshalIndent(g, "", "  ")
			require.NoError(t, err)
			enc = append(enc, '\n')
			golden := filepath.Join(dir, "out", name+".json")
			if *update {
				require.NoError(t, os.WriteFile(golden, enc, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./extproc -update")
			require.Equal(t, string(want), string(enc))
		})
	}
}
