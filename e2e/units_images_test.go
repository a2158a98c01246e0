package e2e

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnitRoutesImagesSDK: the official OpenAI Node SDK's images.generate
// through the binaries, on Imagen (a gemini provider on mockllm: OpenAI's
// images API in, :predict out) and on gpt-image-1 priced by tokens, with
// prices set by the CLI's unit flags. Imagen's rows are charged per image
// the mock billed (a filtered image neither returned nor billed);
// gpt-image-1's its reply's tokens, its row counting the images.
func TestUnitRoutesImagesSDK(t *testing.T) {
	s := startSystem(t)
	s.cli(nil, []string{"CRED=AIza-e2e-imagen"}, "provider", "create", "p-imagen", "--type", "gemini",
		"--base-url", s.mockURL+"/v1beta", "--credential-env", "CRED")
	s.cli(nil, nil, "deployment", "create", "d-imagen", "--provider", "p-imagen", "--model", "imagen-4.0-generate-001")
	s.cli(nil, nil, "model", "create", "imagen", "--deployments", "d-imagen")
	s.cli(nil, nil, "price", "set", "imagen", "--per-image", "0.04")
	s.cli(nil, nil, "deployment", "create", "d-gimg", "--provider", "demo-mock", "--model", "gpt-image-1")
	s.cli(nil, nil, "model", "create", "gpt-image-1", "--deployments", "d-gimg")
	s.cli(nil, nil, "price", "set", "gpt-image-1", "--input", "5", "--output", "40", "--image-tokens", "10,40")
	id, key := s.createKey()
	s.waitKey(key)
	require.Eventually(t, func() bool { // the groups reach the snapshot
		code, _, _ := s.post(key, "/v1/images/generations", `{"model":"imagen","prompt":"warm up"}`)
		return code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	var warm []ledgerRow
	require.Eventually(t, func() bool { warm = s.ledger(id); return len(warm) == 1 }, 10*time.Second, 100*time.Millisecond)
	billed := s.mockStats()["AIza-e2e-imagen"].Images

	var img struct {
		Images int
		B64    int
		Error  any
	}
	s.node("units.mjs", "imagen", key, &img)
	require.Nil(t, img.Error)
	require.Equal(t, 2, img.Images, "three asked, one withheld by the provider's filter")
	require.Positive(t, img.B64)

	var gi struct {
		Images int
		Usage  struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		}
		Error any
	}
	s.node("units.mjs", "gptimage", key, &gi)
	require.Nil(t, gi.Error)
	require.Equal(t, 2, gi.Images)
	require.Equal(t, int64(2*272), gi.Usage.OutputTokens)

	var rows []ledgerRow
	require.Eventually(t, func() bool { rows = s.ledger(id); return len(rows) >= 3 }, 10*time.Second, 100*time.Millisecond)
	got := map[string]ledgerRow{}
	for _, r := range rows[1:] {
		require.Equal(t, http.StatusOK, r.HTTPStatus, "%+v", r)
		got[r.Model] = r
	}
	im := got["imagen"]
	require.Equal(t, "images", im.Unit)
	require.Equal(t, int64(2), im.Quantity)
	require.Equal(t, s.mockStats()["AIza-e2e-imagen"].Images-billed, im.Quantity, "ledger images == the mock's bill")
	require.Equal(t, int64(2*40_000_000), im.Cost.NanoUSD, "2 images at $0.04")

	g := got["gpt-image-1"]
	require.Equal(t, "images", g.Unit)
	require.Equal(t, int64(2), g.Quantity)
	require.Equal(t, gi.Usage.InputTokens, g.Usage.Input)
	require.Equal(t, gi.Usage.OutputTokens, g.Usage.Output)
	// text input at $5, image output at $40 per million tokens, rounded up once
	want := (gi.Usage.InputTokens*5_000_000_000 + gi.Usage.OutputTokens*40_000_000_000 + 999_999) / 1_000_000
	require.Equal(t, want, g.Cost.NanoUSD)
}

// TestUnitRoutesPriceSetFromRefusal: a model group without a price per
// image, under a strict budget, is refused before the provider with a
// message that names the command setting the missing price; running that
// command, with a price in place of DOLLARS, lets the same SDK call
// through, charged at that price.
func TestUnitRoutesPriceSetFromRefusal(t *testing.T) {
	s := startSystem(t)
	s.cli(nil, nil, "deployment", "create", "d-dalle2", "--provider", "demo-mock", "--model", "dall-e-2")
	s.cli(nil, nil, "model", "create", "dall-e-2", "--deployments", "d-dalle2")
	id, key := s.createKey("--budget", "5")
	s.waitKey(key)
	var refused struct {
		Images int
		Error  struct {
			Status  int
			Message string
			Code    string
		}
	}
	require.Eventually(t, func() bool { // the group reaches the snapshot
		refused.Error.Status = 0
		s.node("units.mjs", "unpriced", key, &refused)
		return refused.Error.Status == http.StatusBadRequest
	}, 20*time.Second, 200*time.Millisecond)
	require.Equal(t, "model_price_missing", refused.Error.Code)
	require.Contains(t, refused.Error.Message, "has no price per image")
	require.Empty(t, s.ledger(id), "refused before the provider: nothing charged")

	m := regexp.MustCompile(`tollgate (price set \S+ --\S+) DOLLARS`).FindStringSubmatch(refused.Error.Message)
	require.NotNil(t, m, refused.Error.Message)
	s.cli(nil, nil, append(strings.Fields(m[1]), "0.018")...)

	var ok struct {
		Images int
		Error  any
	}
	require.Eventually(t, func() bool { // the price reaches the gateway
		ok.Error = nil
		s.node("units.mjs", "unpriced", key, &ok)
		return ok.Error == nil
	}, 20*time.Second, 200*time.Millisecond)
	require.Equal(t, 1, ok.Images)
	var rows []ledgerRow
	require.Eventually(t, func() bool { rows = s.ledger(id); return len(rows) == 1 }, 10*time.Second, 100*time.Millisecond)
	require.Equal(t, "images", rows[0].Unit)
	require.Equal(t, int64(1), rows[0].Quantity)
	require.Equal(t, int64(18_000_000), rows[0].Cost.NanoUSD, "one image at the price the command set")
}

// TestUnitRoutesImagenEditSDK: the official OpenAI Node SDK's images.edit
// (multipart) through the binaries on Vertex's Imagen capability model
// (imagen-3.0-capability-001 :predict with referenceImages, the mock
// checking the raw image, the mask and the edit mode), with a mask and
// without; each row charged per image at the price the CLI set, the ledger
// equal to the mock's bill.
func TestUnitRoutesImagenEditSDK(t *testing.T) {
	s := startSystem(t)
	const sa = "imagen@acme.iam.gserviceaccount.com"
	s.cli(nil, nil, "provider", "create", "p-vertex", "--type", "vertex",
		"--base-url", s.mockURL+"/v1/projects/acme/locations/us-central1", "--credential-file", s.vertexServiceAccount(sa))
	s.cli(nil, nil, "deployment", "create", "d-imagen-edit", "--provider", "p-vertex", "--model", "imagen-3.0-capability-001")
	s.cli(nil, nil, "model", "create", "imagen-edit", "--deployments", "d-imagen-edit")
	s.cli(nil, nil, "price", "set", "imagen-edit", "--per-image", "0.02")
	id, key := s.createKey()
	s.waitKey(key)

	var got struct {
		Masked, Plain, B64 int
		Error              any
	}
	require.Eventually(t, func() bool { // the group reaches the snapshot
		got.Error = nil
		s.node("units.mjs", "imagenedit", key, &got)
		return got.Error == nil
	}, 20*time.Second, 200*time.Millisecond)
	require.Equal(t, 2, got.Masked)
	require.Equal(t, 1, got.Plain)
	require.Positive(t, got.B64)

	var rows []ledgerRow
	require.Eventually(t, func() bool { rows = s.ledger(id); return len(rows) == 2 }, 10*time.Second, 100*time.Millisecond)
	var images int64
	for _, r := range rows {
		require.Equal(t, http.StatusOK, r.HTTPStatus, "%+v", r)
		require.Equal(t, "imagen-edit", r.Model)
		require.Equal(t, "images", r.Unit)
		require.Equal(t, r.Quantity*20_000_000, r.Cost.NanoUSD, "$0.02 an image")
		images += r.Quantity
	}
	require.Equal(t, int64(3), images)
	require.Equal(t, s.mockStats()[sa].Images, images, "ledger images == the mock's bill")
}

// TestUnitRoutesImagesStreamSDK: the OpenAI Node SDK's streamed
// images.generate (stream: true, partial_images) on gpt-image-1 through the
// binaries: the events reach the client as the provider sent them, and the
// request is settled from the completed events' usage — the prompt's input
// tokens once, each image's output tokens (partial images included) — its
// row counting the images.
func TestUnitRoutesImagesStreamSDK(t *testing.T) {
	s := startSystem(t)
	s.cli(nil, nil, "deployment", "create", "d-gimg", "--provider", "demo-mock", "--model", "gpt-image-1")
	s.cli(nil, nil, "model", "create", "gpt-image-1", "--deployments", "d-gimg")
	s.cli(nil, nil, "price", "set", "gpt-image-1", "--input", "5", "--output", "40", "--image-tokens", "10,40")
	id, key := s.createKey()
	s.waitKey(key)
	var got struct {
		Partial, Completed int
		Input, Output      int64
		Error              any
	}
	require.Eventually(t, func() bool { // the group reaches the snapshot
		got.Error = nil
		s.node("units.mjs", "gptimagestream", key, &got)
		return got.Error == nil
	}, 20*time.Second, 200*time.Millisecond)
	require.Equal(t, 4, got.Partial, "two previews of each of two images")
	require.Equal(t, 2, got.Completed)
	require.Equal(t, int64(2*(272+2*100)), got.Output)

	var rows []ledgerRow
	require.Eventually(t, func() bool { rows = s.ledger(id); return len(rows) == 1 }, 10*time.Second, 100*time.Millisecond)
	r := rows[0]
	require.Equal(t, http.StatusOK, r.HTTPStatus, "%+v", r)
	require.Equal(t, "images", r.Unit)
	require.Equal(t, int64(2), r.Quantity)
	require.Equal(t, got.Input, r.Usage.Input)
	require.Equal(t, got.Output, r.Usage.Output)
	want := (got.Input*5_000_000_000 + got.Output*40_000_000_000 + 999_999) / 1_000_000
	require.Equal(t, want, r.Cost.NanoUSD)
	var billed int64
	for _, k := range s.mockStats() {
		billed += k.Images
	}
	require.Equal(t, r.Quantity, billed, "ledger images == the mock's bill")
}
