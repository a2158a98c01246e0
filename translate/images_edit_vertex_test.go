package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// editPNG is a 2×1 PNG whose left pixel is transparent (OpenAI: edit
// there) and right pixel opaque.
func editPNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	img.Set(0, 0, color.NRGBA{R: 10, A: 0})
	img.Set(1, 0, color.NRGBA{R: 10, A: 255})
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

// testEditForm is a multipart form of fields and file parts (name → bytes).
func testEditForm(fields [][2]string, files [][2]string) (body []byte, boundary string) {
	const bd = "edit-bound"
	var b bytes.Buffer
	for _, f := range fields {
		b.WriteString("--" + bd + "\r\nContent-Disposition: form-data; name=\"" + f[0] + "\"\r\n\r\n" + f[1] + "\r\n")
	}
	for _, f := range files {
		b.WriteString("--" + bd + "\r\nContent-Disposition: form-data; name=\"" + f[0] + "\"; filename=\"x.png\"\r\nContent-Type: image/png\r\n\r\n" + f[1] + "\r\n")
	}
	b.WriteString("--" + bd + "--\r\n")
	return b.Bytes(), bd
}

// TestImagenEditRequest: an OpenAI edit form becomes Vertex's capability
// :predict — the image the RAW reference, OpenAI's mask (transparent: edit)
// Imagen's (white: edit) with a user-provided mask mode and the inpainting
// mode; without a mask, the default edit mode — and what Imagen cannot do
// is a 400 naming the field.
func TestImagenEditRequest(t *testing.T) {
	target := &Target{Provider: ProviderVertex, BasePath: "/v1/projects/p/locations/l", ProviderModel: "imagen-3.0-capability-001"}
	pic := editPNG(t)
	fields := [][2]string{{"model", "imagen-edit"}, {"prompt", "a hat"}, {"n", "2"}, {"size", "1024x1024"}, {"response_format", "b64_json"}}
	for _, masked := range []bool{true, false} {
		files := [][2]string{{"image", string(pic)}}
		if masked {
			files = append(files, [2]string{"mask", string(pic)})
		}
		body, bd := testEditForm(fields, files)
		u := &UnitRequest{Unit: kernel.UnitImages, Bound: 2, Boundary: bd}
		tr := &imagesGemini{edit: true}
		out, err := tr.Request(&Inbound{API: APIImageEdits, Model: "imagen-edit", Body: body, Unit: u}, target)
		require.NoError(t, err)
		require.Equal(t, "/v1/projects/p/locations/l/publishers/google/models/imagen-3.0-capability-001:predict", out.Path)
		require.Contains(t, out.Headers, [2]string{"content-type", "application/json"})
		var req gemini.ImagenPredictRequest
		require.NoError(t, json.Unmarshal(out.Body, &req))
		require.Len(t, req.Instances, 1)
		in := req.Instances[0]
		require.Equal(t, "a hat", in.Prompt)
		require.Equal(t, int64(2), req.Parameters.SampleCount)
		require.Empty(t, req.Parameters.AspectRatio, "an edit's output follows its input")
		raw := in.ReferenceImages[0]
		require.Equal(t, gemini.ReferenceTypeRaw, raw.ReferenceType)
		require.Equal(t, "image/png", raw.ReferenceImage.MimeType)
		require.Equal(t, base64.StdEncoding.EncodeToString(pic), raw.ReferenceImage.BytesBase64Encoded)
		if !masked {
			require.Len(t, in.ReferenceImages, 1)
			require.Equal(t, gemini.EditModeDefault, req.Parameters.EditMode)
			continue
		}
		require.Len(t, in.ReferenceImages, 2)
		require.Equal(t, gemini.EditModeInpaintInsertion, req.Parameters.EditMode)
		m := in.ReferenceImages[1]
		require.Equal(t, gemini.ReferenceTypeMask, m.ReferenceType)
		require.Equal(t, gemini.MaskModeUserProvided, m.MaskImageConfig.MaskMode)
		mb, err := base64.StdEncoding.DecodeString(m.ReferenceImage.BytesBase64Encoded)
		require.NoError(t, err)
		mask, err := png.Decode(bytes.NewReader(mb))
		require.NoError(t, err)
		require.Equal(t, color.Gray{Y: 255}, color.GrayModel.Convert(mask.At(0, 0)), "transparent in OpenAI's mask: white, edited")
		require.Equal(t, color.Gray{Y: 0}, color.GrayModel.Convert(mask.At(1, 0)), "opaque: black, kept")

		_, usage, err := tr.Response([]byte(`{"predictions":[{"bytesBase64Encoded":"YQ=="},{"bytesBase64Encoded":"Yg=="}]}`))
		require.NoError(t, err)
		require.Equal(t, kernel.Usage{Input: 2}, usage, "per image the reply holds")
	}

	for _, c := range []struct {
		name    string
		fields  [][2]string
		files   [][2]string
		partial bool
		field   string
	}{
		{"no image", fields, nil, false, "image"},
		{"two images", fields, [][2]string{{"image[]", string(pic)}, {"image[]", string(pic)}}, false, "image"},
		{"not an image", fields, [][2]string{{"image", "plain text"}}, false, "image"},
		{"mask not a PNG", fields, [][2]string{{"image", string(pic)}, {"mask", "nope"}}, false, "mask"},
		{"no prompt", [][2]string{{"model", "m"}}, [][2]string{{"image", string(pic)}}, false, "prompt"},
		{"n over 4", append(fields[:1:1], [2]string{"prompt", "p"}, [2]string{"n", "5"}), [][2]string{{"image", string(pic)}}, false, "n"},
		{"larger than the buffer", fields, [][2]string{{"image", string(pic)}}, true, "image"},
	} {
		body, bd := testEditForm(c.fields, c.files)
		u := &UnitRequest{Unit: kernel.UnitImages, Bound: 1, Boundary: bd, Partial: c.partial}
		_, err := (&imagesGemini{edit: true}).Request(&Inbound{API: APIImageEdits, Body: body, Unit: u}, target)
		var fe *fieldError
		require.ErrorAs(t, err, &fe, c.name)
		require.Equal(t, c.field, fe.Field, c.name)
	}
}
