package translate

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/schema/gemini"
)

// imagesGemini serves OpenAI's image generations (POST /v1/images/generations)
// from an Imagen model, on the Gemini API or Vertex AI alike (:predict, the
// same body; schema/gemini/imagen.go): prompt → the instance's prompt, n →
// sampleCount (Imagen makes 1 to 4), size → the nearest of Imagen's aspect
// ratios (and the 2K tier from 2048 pixels up), output_format →
// outputOptions.mimeType. The predictions come back as OpenAI's data list,
// base64 (or, with response_format=url, data: URLs: Imagen returns bytes, not
// links); an image Google's filters withheld is left out, and is not billed.
// The request is charged per image (UnitRequest): the images the reply holds.
type imagesGemini struct {
	apiKey  string
	created int64
	url     bool   // response_format=url
	format  string // output_format asked for ("" when none)
	req     *UnitRequest
	edit    bool // an edit (POST /v1/images/edits) on a capability model
}

var _ Translator = (*imagesGemini)(nil)

// imagenMaxImages is the most images one Imagen request makes.
const imagenMaxImages = 4

// imagesBody is what the translator reads of an OpenAI images request.
type imagesBody struct {
	Prompt            *string `json:"prompt"`
	N                 *int64  `json:"n"`
	Size              string  `json:"size"`
	ResponseFormat    string  `json:"response_format"`
	OutputFormat      string  `json:"output_format"`
	OutputCompression *int64  `json:"output_compression"`
}

// Request builds the :predict request (editRequest for an edit).
func (t *imagesGemini) Request(in *Inbound, target *Target) (*Outbound, error) {
	t.apiKey, t.created, t.req = target.APIKey, anthropicNow().Unix(), in.Unit
	if t.edit {
		return t.editRequest(in, target) // images_edit_vertex.go
	}
	if in.Stream {
		return nil, &fieldError{"stream", "is not supported on Imagen models"}
	}
	var b imagesBody
	if err := json.Unmarshal(in.Body, &b); err != nil {
		return nil, &fieldError{"body", err.Error()}
	}
	params, err := t.imagenParams(&b, target, true)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(gemini.ImagenPredictRequest{Instances: []gemini.ImagenInstance{{Prompt: *b.Prompt}}, Parameters: params})
	if err != nil {
		return nil, err
	}
	return &Outbound{Path: geminiPath(target, in, geminiPredict), Headers: geminiHeaders(target), Body: body}, nil
}

// imagenParams checks b and maps it onto Imagen's parameters; the size
// maps onto the aspect ratio and tier of a generation only (an edit's
// output follows its input).
func (t *imagesGemini) imagenParams(b *imagesBody, target *Target, generation bool) (*gemini.ImagenParameters, error) {
	if b.Prompt == nil || *b.Prompt == "" {
		return nil, &fieldError{"prompt", "is required"}
	}
	n := int64(1)
	if b.N != nil {
		n = *b.N
	}
	if n < 1 || n > imagenMaxImages {
		return nil, &fieldError{"n", "must be an integer from 1 to 4 on Imagen models"}
	}
	switch b.ResponseFormat {
	case "", "b64_json":
	case "url":
		t.url = true
	default:
		return nil, &fieldError{"response_format", "must be url or b64_json"}
	}
	params := &gemini.ImagenParameters{SampleCount: n}
	ratio, tier, err := imagenSize(b.Size)
	if err != nil {
		return nil, err
	}
	if generation {
		params.AspectRatio = ratio
		if target.Provider == ProviderVertex {
			params.SampleImageSize = tier
		} else {
			params.ImageSize = tier
		}
	}
	switch b.OutputFormat {
	case "":
	case "png", "jpeg":
		t.format = b.OutputFormat
		params.OutputOptions = &gemini.ImagenOutputOptions{MimeType: "image/" + b.OutputFormat}
		if b.OutputFormat == "jpeg" {
			params.OutputOptions.CompressionQuality = b.OutputCompression
		}
	default:
		return nil, &fieldError{"output_format", "must be png or jpeg on Imagen models"}
	}
	return params, nil
}

// geminiPredict is the method of Imagen's models.
const geminiPredict = "predict"

// imagenRatios are Imagen's aspect ratios, width over height.
var imagenRatios = [...]struct {
	name  string
	ratio float64
}{{"1:1", 1}, {"3:4", 0.75}, {"4:3", 4.0 / 3}, {"9:16", 9.0 / 16}, {"16:9", 16.0 / 9}}

// imagenSize maps OpenAI's size ("WIDTHxHEIGHT", "auto" or none) onto the
// nearest Imagen aspect ratio (by the ratio's logarithm) and its size tier:
// "2K" from 2048 pixels on a side up, else the model's default (1K).
func imagenSize(size string) (ratio, tier string, err error) {
	if size == "" || size == "auto" {
		return "", "", nil
	}
	w, h, ok := strings.Cut(size, "x")
	width, errW := strconv.Atoi(w)
	height, errH := strconv.Atoi(h)
	if !ok || errW != nil || errH != nil || width <= 0 || height <= 0 || width > 1<<14 || height > 1<<14 {
		return "", "", &fieldError{"size", "must be WIDTHxHEIGHT (e.g. 1024x1024) or auto"}
	}
	r, best := math.Log(float64(width)/float64(height)), math.Inf(1)
	for _, c := range imagenRatios {
		if d := math.Abs(r - math.Log(c.ratio)); d < best {
			ratio, best = c.name, d
		}
	}
	if max(width, height) >= 2048 {
		tier = "2K"
	}
	return ratio, tier, nil
}

// openAIImages is OpenAI's images reply.
type openAIImages struct {
	Created      int64         `json:"created"`
	Data         []openAIImage `json:"data"`
	OutputFormat string        `json:"output_format,omitempty"`
}

type openAIImage struct {
	B64JSON       string `json:"b64_json,omitempty"`
	URL           string `json:"url,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

// Response converts the predictions into OpenAI's data list; the usage is
// the images it holds.
func (t *imagesGemini) Response(body []byte) ([]byte, kernel.Usage, error) {
	var r gemini.ImagenPredictResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, kernel.Usage{}, err
	}
	out := openAIImages{Created: t.created, Data: make([]openAIImage, 0, len(r.Predictions)), OutputFormat: t.format}
	for i := range r.Predictions {
		p := &r.Predictions[i]
		if !p.Image() { // filtered out: no image, no charge
			continue
		}
		img := openAIImage{RevisedPrompt: p.Prompt}
		switch {
		case p.BytesBase64Encoded == "":
			img.URL = p.GCSURI // the output went to Cloud Storage (storageUri)
		case t.url:
			mime := p.MimeType
			if mime == "" {
				mime = "image/png"
			}
			img.URL = "data:" + mime + ";base64," + p.BytesBase64Encoded
		default:
			img.B64JSON = p.BytesBase64Encoded
		}
		out.Data = append(out.Data, img)
	}
	n := int64(len(out.Data))
	if t.req != nil {
		t.req.Images = n
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, kernel.Usage{}, err
	}
	return b, kernel.Usage{Input: n}, nil
}

// StreamChunk is not reached: image generations do not stream here.
func (t *imagesGemini) StreamChunk(chunk []byte, _ bool) ([]byte, error) { return chunk, nil }

// StreamUsage: nothing is known before the reply.
func (t *imagesGemini) StreamUsage() (kernel.Usage, bool) { return kernel.Usage{}, false }

// Error converts a Google error into OpenAI's error shape.
func (t *imagesGemini) Error(status int, body []byte) []byte {
	return upstreamGeminiError(status, body, t.apiKey).OpenAIBody()
}
