package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/cli"
	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// runBoth runs one command line and returns its stdout and stderr.
func (s *server) runBoth(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err := cli.Main(ctx, append(append([]string{}, args...), "--addr", s.addr, "--admin-key", s.key), &out, &errOut)
	require.NoError(t, err, "%v: %s", args, errOut.String())
	return out.String(), errOut.String()
}

// TestPriceMissingCommands: a deployment without a price is warned about on
// stderr when created, listed by `price missing` until --free or
// --base-model settles it, and an unpriced ledger row shows as unpriced in
// `spend logs`, never as $0.
func TestPriceMissingCommands(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, open(t))
			runSteps(t, s, []step{
				{args: []string{"provider", "create", "az", "--type", "azure", "--base-url", "https://x.openai.azure.com"}, want: []string{"az"}},
				{args: []string{"provider", "create", "local", "--type", "openai", "--base-url", "http://127.0.0.1:9"}, want: []string{"local"}},
				{args: []string{"price", "defaults"}, want: []string{"gpt-4o"}},
				{args: []string{"price", "missing"}, want: []string{"every deployment has a price"}},
			})
			out, warn := s.runBoth(t, "deployment", "create", "east", "--provider", "az", "--model", "prod-east-4o")
			require.Contains(t, out, "prod-east-4o")
			require.Contains(t, warn, `warning: deployment "east": no price for model "prod-east-4o"`)
			out, warn = s.runBoth(t, "deployment", "create", "llama", "--provider", "local", "--model", "llama-3", "-o", "json")
			require.Contains(t, out, `"llama-3"`)
			require.Contains(t, warn, `no price for model "llama-3"`, "warned on stderr, JSON stays clean on stdout")
			runSteps(t, s, []step{
				{args: []string{"price", "missing"}, want: []string{"DEPLOYMENT", "east", "prod-east-4o", "llama", "llama-3"}},
				{args: []string{"price", "missing", "-o", "json"}, want: []string{`"names_tried"`, `"prod-east-4o"`}},
				{args: []string{"deployment", "update", "llama", "--free"}, want: []string{"FREE", "true"}},
			})
			out, warn = s.runBoth(t, "deployment", "update", "east", "--base-model", "gpt-4o")
			require.Contains(t, out, "gpt-4o")
			require.Empty(t, warn)
			runSteps(t, s, []step{{args: []string{"price", "missing"}, want: []string{"every deployment has a price"}}})

			at := time.Date(2026, 3, 10, 1, 0, 0, 0, time.UTC)
			require.NoError(t, s.st.Append(context.Background(), store.LedgerEntry{
				RequestID: "req-unpriced", KeyID: "k1", Model: "mystery", Usage: kernel.Usage{Input: 10, Output: 5},
				HTTPStatus: 200, StartedAt: at, EndedAt: at, Unpriced: true,
			}))
			require.NoError(t, s.st.Flush(context.Background()))
			out, _ = s.runBoth(t, "spend", "logs", "--since", "2026-03-01")
			require.Contains(t, out, "req-unpriced")
			require.Contains(t, out, "unpriced")
			require.NotContains(t, out, "$0")
			out, _ = s.runBoth(t, "spend", "logs", "--since", "2026-03-01", "-o", "json")
			var logs struct {
				Entries []struct {
					RequestID string `json:"request_id"`
					Unpriced  bool   `json:"unpriced"`
				} `json:"entries"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &logs), out)
			require.Len(t, logs.Entries, 1)
			require.True(t, logs.Entries[0].Unpriced, out)
		})
	}
}

// TestPriceSetUnits: `price set` takes prices per unit and sets only the
// prices given: a price per image on a model never priced, seconds added
// to a model priced per token without losing its token prices.
func TestPriceSetUnits(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, open(t))
			runSteps(t, s, []step{
				{args: []string{"price", "set", "dall-e-3", "--per-image", "1024x1024/hd=0.08,*=0.04"}, want: []string{"image * $0.04, 1024x1024/hd $0.08"}},
				{args: []string{"price", "set", "imagen-4", "--per-image", "0.04"}, want: []string{"image * $0.04"}},
				{args: []string{"price", "set", "gpt-4o-transcribe", "--input", "2.5", "--output", "10", "--cached-input", "1"}, want: []string{"$2.50", "$10.00", "$1.00"}},
				{args: []string{"price", "set", "gpt-4o-transcribe", "--per-second", "0.0001"}, want: []string{"$2.50", "$10.00", "$1.00", "second $0.0001"}},
				{args: []string{"price", "set", "gpt-4o-transcribe", "--input", "3", "--output", "12"}, want: []string{"$3.00", "$12.00", "second $0.0001"}},
				{args: []string{"price", "set", "tts-1", "--per-character", "0.000015"}, want: []string{"character $0.000015"}},
				{args: []string{"price", "set", "rerank-v3.5", "--per-search-unit", "0.002"}, want: []string{"search unit $0.002"}},
				{args: []string{"price", "set", "gpt-image-1", "--input", "5", "--output", "40", "--image-tokens", "10,40"}, want: []string{"image tokens $10.00/$40.00 per 1M"}},
				{args: []string{"price", "get", "gpt-image-1", "-o", "json"}, want: []string{`"image_input_tokens"`, `"dollars": "10"`}},
				{args: []string{"price", "list"}, want: []string{"PER UNIT", "dall-e-3", "tts-1"}},
				{args: []string{"price", "set", "m"}, wantErr: "give a price"},
				{args: []string{"price", "set", "m", "--per-image", "1024x1024="}, wantErr: "--per-image"},
				{args: []string{"price", "set", "m", "--image-tokens", "10"}, wantErr: "IN,OUT"},
			})
			out, _ := s.runBoth(t, "price", "get", "gpt-4o-transcribe")
			require.NotContains(t, out, "$1.00", "--input and --output set the token price whole: cached input back to its default")
		})
	}
}

// TestSpendLogsUnits: a row charged per unit shows its unit and quantity in
// `spend logs` (and in its JSON), not its quantity as input tokens.
func TestSpendLogsUnits(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			s := startServer(t, open(t))
			at := time.Date(2026, 3, 10, 1, 0, 0, 0, time.UTC)
			for _, e := range []store.LedgerEntry{
				{RequestID: "req-img", KeyID: "k1", Model: "dall-e-3", Usage: kernel.Usage{Input: 3}, Cost: 120 * kernel.Dollar / 1000, Unit: kernel.UnitImages, Quantity: 3},
				{RequestID: "req-chat", KeyID: "k1", Model: "gpt-4o", Usage: kernel.Usage{Input: 1200, Output: 34}, Cost: 5 * kernel.Cent},
			} {
				e.HTTPStatus, e.StartedAt, e.EndedAt = 200, at, at
				require.NoError(t, s.st.Append(context.Background(), e))
			}
			require.NoError(t, s.st.Flush(context.Background()))
			out, _ := s.runBoth(t, "spend", "logs", "--since", "2026-03-01")
			require.Contains(t, out, "UNITS")
			var img, chat string
			for line := range strings.SplitSeq(out, "\n") {
				switch {
				case strings.Contains(line, "req-img"):
					img = line
				case strings.Contains(line, "req-chat"):
					chat = line
				}
			}
			require.Regexp(t, `dall-e-3\s+-\s+-\s+-\s+3 images\s+\$0\.12`, img, out)
			require.Regexp(t, `1200\s+34\s+-\s+\$0\.05`, chat, out)

			out, _ = s.runBoth(t, "spend", "logs", "--since", "2026-03-01", "-o", "json")
			var logs struct {
				Entries []struct {
					RequestID string `json:"request_id"`
					Unit      string `json:"unit"`
					Quantity  string `json:"quantity"` // protojson: int64 as a string
				} `json:"entries"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &logs), out)
			require.Len(t, logs.Entries, 2)
			for _, e := range logs.Entries {
				if e.RequestID == "req-img" {
					require.Equal(t, "images", e.Unit)
					require.Equal(t, "3", e.Quantity)
				}
			}
		})
	}
}
