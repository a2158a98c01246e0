package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// unitsConfig puts the unit routes' models on the demo's mock provider,
// named as the provider names them, with their prices per unit.
const unitsConfig = `deployments:
  - {id: mock-dalle, provider: demo-mock, provider_model: dall-e-3}
  - {id: mock-whisper, provider: demo-mock, provider_model: whisper-1}
  - {id: mock-tts, provider: demo-mock, provider_model: tts-1}
  - {id: mock-mod, provider: demo-mock, provider_model: omni-moderation-latest}
  - {id: mock-rerank, provider: demo-mock, provider_model: rerank-v3.5}
models:
  - {id: dall-e-3, deployments: [mock-dalle]}
  - {id: whisper-1, deployments: [mock-whisper]}
  - {id: tts-1, deployments: [mock-tts]}
  - {id: omni-moderation-latest, deployments: [mock-mod]}
  - {id: rerank-v3.5, deployments: [mock-rerank]}
prices:
  - {model: dall-e-3, image: {"1024x1024/hd": "0.08", "*": "0.04"}}
  - {model: whisper-1, second: "0.0001"}
  - {model: tts-1, character: "0.000015"}
  - {model: omni-moderation-latest, input: "0.1", output: "0"}
  - {model: rerank-v3.5, search: "0.002"}
`

// TestUnitRoutesSDK is #34's routes charged per unit end to end with the
// binaries, the CLI and the official OpenAI Node SDK (images.generate,
// audio.transcriptions.create with a generated WAV, audio.speech.create,
// moderations.create) and raw HTTP for rerank: each ledger row's cost is
// the mock's bill in its unit at the unit's price, exactly.
func TestUnitRoutesSDK(t *testing.T) {
	s := startSystem(t)
	path := filepath.Join(t.TempDir(), "units.yaml")
	require.NoError(t, os.WriteFile(path, []byte(unitsConfig), 0o600))
	s.cli(nil, nil, "apply", "-f", path)
	id, key := s.createKey()
	s.waitKey(key)
	rerank := `{"model":"rerank-v3.5","query":"capital of France","documents":["Paris","Berlin","Rome"],"top_n":2}`
	require.Eventually(t, func() bool { // the models reach the snapshot
		code, _, _ := s.post(key, "/v1/rerank", rerank)
		return code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	// The warm-up's row is written by the ledger's group commit, after its
	// reply: counted before it lands, it would be counted again below.
	require.Eventually(t, func() bool {
		return slices.ContainsFunc(s.ledger(id), func(r ledgerRow) bool { return r.Model == "rerank-v3.5" && r.HTTPStatus == http.StatusOK })
	}, 10*time.Second, 50*time.Millisecond)
	warm := len(s.ledger(id))

	var img struct {
		Images int
		B64    int
		Error  any
	}
	s.node("units.mjs", "images", key, &img)
	require.Nil(t, img.Error)
	require.Equal(t, 2, img.Images)
	require.Positive(t, img.B64)

	var tr struct {
		Text  string
		Error any
	}
	s.node("units.mjs", "transcription", key, &tr)
	require.Nil(t, tr.Error)
	require.Equal(t, "mock transcribe of 3 seconds", tr.Text)

	var sp struct {
		Bytes       int
		RIFF        string
		ContentType string
		Error       any
	}
	s.node("units.mjs", "speech", key, &sp)
	require.Nil(t, sp.Error)
	require.Equal(t, "RIFF", sp.RIFF)
	require.Equal(t, 44+18*100, sp.Bytes, "the whole audio: 100 samples per character of input")

	var mod struct {
		Results int
		Error   any
	}
	s.node("units.mjs", "moderations", key, &mod)
	require.Nil(t, mod.Error)
	require.Equal(t, 1, mod.Results)

	code, _, b := s.post(key, "/v1/rerank", rerank)
	require.Equal(t, http.StatusOK, code, string(b))
	require.Contains(t, string(b), `"search_units":1`)

	var rows []ledgerRow
	require.Eventually(t, func() bool { rows = s.ledger(id); return len(rows) >= warm+5 }, 10*time.Second, 100*time.Millisecond)
	cost := map[string]int64{}
	for _, r := range rows[warm:] {
		require.Equal(t, http.StatusOK, r.HTTPStatus, "%+v", r)
		cost[r.Model] += r.Cost.NanoUSD
	}
	require.Equal(t, map[string]int64{
		"dall-e-3":               2 * 80_000_000, // 2 images, 1024x1024 hd
		"whisper-1":              3 * 100_000,    // 3 seconds
		"tts-1":                  18 * 15_000,    // "Hello from the SDK": 18 characters
		"omni-moderation-latest": cost["omni-moderation-latest"],
		"rerank-v3.5":            2_000_000, // one search unit
	}, cost)
	require.Positive(t, cost["omni-moderation-latest"], "moderations: input tokens at their price")

	// Over budget: refused before the provider.
	poorID, poor := s.createKey("--budget", "0.01")
	s.waitKey(poor)
	code, _, b = s.post(poor, "/v1/images/generations", `{"model":"dall-e-3","prompt":"p","n":1}`)
	require.Equal(t, http.StatusBadRequest, code, string(b))
	require.Contains(t, string(b), `"code":"budget_exceeded"`)
	require.Empty(t, s.ledger(poorID))
}
