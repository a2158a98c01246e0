package translate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// Image edits (POST /v1/images/edits, multipart) on Vertex AI's Imagen
// capability model (imagen-3.0-capability-001 :predict, Google's "Edit
// images" reference; the Gemini API has no Imagen edits): the form's image
// becomes the REFERENCE_TYPE_RAW reference image, its mask (OpenAI's: a PNG
// whose fully transparent pixels are where to edit) the REFERENCE_TYPE_MASK
// one as Imagen reads masks (white where to edit, black elsewhere) with
// maskMode MASK_MODE_USER_PROVIDED and editMode EDIT_MODE_INPAINT_INSERTION;
// without a mask the image alone, EDIT_MODE_DEFAULT. prompt, n (1 to 4),
// response_format and output_format map as on generations; size is not an
// edit's parameter on Imagen (the output follows the input) and is only
// priced. The reply is generations' (imagesGemini.Response), charged per
// image it holds. The whole form is read: an upload larger than what the
// processor sees (--max-body-bytes) is refused rather than cut.

// editForm is what an edit's form holds.
type editForm struct {
	fields map[string]string
	images [][2]string // [mime type, base64] of each image / image[] part
	mask   []byte
}

// editRequest builds the :predict request of an edit.
func (t *imagesGemini) editRequest(in *Inbound, target *Target) (*Outbound, error) {
	if in.Unit == nil || in.Unit.Boundary == "" {
		return nil, &fieldError{"content-type", "must be multipart/form-data with a boundary"}
	}
	if in.Unit.Partial {
		return nil, &fieldError{"image", "is larger than the gateway's body buffer (--max-body-bytes): an edit on Imagen is sent as JSON, so the whole form must fit"}
	}
	f, err := readEditForm(in.Body, in.Unit.Boundary)
	if err != nil {
		return nil, err
	}
	b := imagesBody{Size: f.fields["size"], ResponseFormat: f.fields["response_format"], OutputFormat: f.fields["output_format"]}
	if p, ok := f.fields["prompt"]; ok {
		b.Prompt = &p
	}
	for name, dst := range map[string]**int64{"n": &b.N, "output_compression": &b.OutputCompression} {
		if v, ok := f.fields[name]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, &fieldError{name, "must be an integer"}
			}
			*dst = &n
		}
	}
	switch len(f.images) {
	case 0:
		return nil, &fieldError{"image", "is required"}
	case 1:
	default:
		return nil, &fieldError{"image", "must be one image on Imagen models"}
	}
	inst := gemini.ImagenInstance{ReferenceImages: []gemini.ImagenReferenceImage{{
		ReferenceType: gemini.ReferenceTypeRaw, ReferenceID: 1,
		ReferenceImage: gemini.ImagenImage{MimeType: f.images[0][0], BytesBase64Encoded: f.images[0][1]},
	}}}
	params, err := t.imagenParams(&b, target, false)
	if err != nil {
		return nil, err
	}
	inst.Prompt = *b.Prompt
	params.EditMode = gemini.EditModeDefault
	if f.mask != nil {
		m, err := imagenMask(f.mask)
		if err != nil {
			return nil, err
		}
		inst.ReferenceImages = append(inst.ReferenceImages, gemini.ImagenReferenceImage{
			ReferenceType: gemini.ReferenceTypeMask, ReferenceID: 2,
			ReferenceImage:  gemini.ImagenImage{MimeType: "image/png", BytesBase64Encoded: base64.StdEncoding.EncodeToString(m)},
			MaskImageConfig: &gemini.ImagenMaskConfig{MaskMode: gemini.MaskModeUserProvided},
		})
		params.EditMode = gemini.EditModeInpaintInsertion
	}
	body, err := json.Marshal(gemini.ImagenPredictRequest{Instances: []gemini.ImagenInstance{inst}, Parameters: params})
	if err != nil {
		return nil, err
	}
	headers := append(geminiHeaders(target), [2]string{"content-type", "application/json"})
	return &Outbound{Path: geminiPath(target, in, geminiPredict), Headers: headers, Body: body}, nil
}

// readEditForm reads every part of an edit's form.
func readEditForm(body []byte, boundary string) (*editForm, error) {
	f := &editForm{fields: map[string]string{}}
	r := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, &fieldError{"body", "is not a multipart/form-data form: " + err.Error()}
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, &fieldError{"body", "is not a multipart/form-data form: " + err.Error()}
		}
		switch name := p.FormName(); name {
		case "image", "image[]":
			mt := http.DetectContentType(data) // the bytes, not the part's claim: Imagen reads the bytes
			if mt != "image/png" && mt != "image/jpeg" {
				return nil, &fieldError{"image", "must be a PNG or JPEG image on Imagen models"}
			}
			f.images = append(f.images, [2]string{mt, base64.StdEncoding.EncodeToString(data)})
		case "mask":
			f.mask = data
		case "":
		default:
			if _, dup := f.fields[name]; !dup {
				f.fields[name] = string(data)
			}
		}
	}
}

// imagenMask turns OpenAI's mask (a PNG whose fully transparent pixels are
// where to edit) into Imagen's (a PNG whose non-zero pixels are): white
// where the mask is transparent, black elsewhere.
func imagenMask(b []byte) ([]byte, error) {
	src, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, &fieldError{"mask", "must be a PNG image (its transparent pixels are where to edit)"}
	}
	r := src.Bounds()
	dst := image.NewGray(r)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if _, _, _, a := src.At(x, y).RGBA(); a == 0 {
				dst.SetGray(x, y, color.Gray{Y: 255})
			}
		}
	}
	var out bytes.Buffer
	if err := png.Encode(&out, dst); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
