package gemini

// Imagen's :predict, the same body on the Gemini API
// (POST /v1beta/models/{m}:predict, x-goog-api-key) and on Vertex AI
// (POST …/publishers/google/models/{m}:predict, OAuth2): Google's "Imagen
// API" reference (cloud.google.com/vertex-ai/generative-ai/docs/model-reference/imagen-api)
// and the Gemini API's image generation guide.

// ImagenPredictRequest asks for images from a text prompt: one instance.
type ImagenPredictRequest struct {
	Instances  []ImagenInstance  `json:"instances"`
	Parameters *ImagenParameters `json:"parameters,omitempty"`
}

// ImagenInstance is the prompt of one request, and the images an edit
// works on (Vertex AI's capability models, imagen-3.0-capability-001:
// "Edit images", cloud.google.com/vertex-ai/generative-ai/docs/model-reference/imagen-api-edit).
type ImagenInstance struct {
	Prompt          string                 `json:"prompt"`
	ReferenceImages []ImagenReferenceImage `json:"referenceImages,omitempty"`
}

// The reference types of an edit: the image to edit, and the mask whose
// non-zero pixels say where to edit it.
const (
	ReferenceTypeRaw  = "REFERENCE_TYPE_RAW"
	ReferenceTypeMask = "REFERENCE_TYPE_MASK"
)

// The edit modes (ImagenParameters.EditMode) the gateway asks for: a
// masked edit inserts what the prompt says where the mask is; without a
// mask the model edits the image as the prompt says.
const (
	EditModeDefault          = "EDIT_MODE_DEFAULT"
	EditModeInpaintInsertion = "EDIT_MODE_INPAINT_INSERTION"
)

// MaskModeUserProvided: the mask is the request's image (not one the model
// makes of the background, foreground or a class).
const MaskModeUserProvided = "MASK_MODE_USER_PROVIDED"

// ImagenReferenceImage is one image of an edit.
type ImagenReferenceImage struct {
	ReferenceType   string            `json:"referenceType"`
	ReferenceID     int64             `json:"referenceId"`
	ReferenceImage  ImagenImage       `json:"referenceImage"`
	MaskImageConfig *ImagenMaskConfig `json:"maskImageConfig,omitempty"`
}

// ImagenImage is an image's bytes, base64.
type ImagenImage struct {
	BytesBase64Encoded string `json:"bytesBase64Encoded"`
	MimeType           string `json:"mimeType,omitempty"`
}

// ImagenMaskConfig says how a mask reference is made and used.
type ImagenMaskConfig struct {
	MaskMode string   `json:"maskMode"`
	Dilation *float64 `json:"dilation,omitempty"`
}

// ImagenParameters are the request's options.
type ImagenParameters struct {
	// SampleCount is how many images to generate (1 to 4; Google's default 4).
	SampleCount int64 `json:"sampleCount,omitempty"`
	// AspectRatio is one of "1:1" (default), "3:4", "4:3", "9:16", "16:9".
	AspectRatio string `json:"aspectRatio,omitempty"`
	// ImageSize ("1K", "2K") is the Gemini API's output size tier;
	// SampleImageSize is Vertex AI's name for it.
	ImageSize       string `json:"imageSize,omitempty"`
	SampleImageSize string `json:"sampleImageSize,omitempty"`
	// NegativePrompt says what not to draw (older models only).
	NegativePrompt string `json:"negativePrompt,omitempty"`
	// PersonGeneration: "dont_allow", "allow_adult" (default), "allow_all".
	PersonGeneration string               `json:"personGeneration,omitempty"`
	OutputOptions    *ImagenOutputOptions `json:"outputOptions,omitempty"`
	// EditMode is an edit's (capability models only): EditMode* above.
	EditMode string `json:"editMode,omitempty"`
}

// ImagenOutputOptions is the encoding of the images.
type ImagenOutputOptions struct {
	// MimeType is "image/png" (default) or "image/jpeg".
	MimeType string `json:"mimeType,omitempty"`
	// CompressionQuality is JPEG's quality, 0 to 100.
	CompressionQuality *int64 `json:"compressionQuality,omitempty"`
}

// ImagenPredictResponse holds one prediction per image. An image filtered
// by Responsible AI checks is a prediction with RAIFilteredReason and no
// image (and is not billed); fewer predictions than sampleCount may come
// back.
type ImagenPredictResponse struct {
	Predictions []ImagenPrediction `json:"predictions"`
}

// ImagenPrediction is one generated image, or why it was filtered out.
type ImagenPrediction struct {
	BytesBase64Encoded string `json:"bytesBase64Encoded,omitempty"`
	GCSURI             string `json:"gcsUri,omitempty"`
	MimeType           string `json:"mimeType,omitempty"`
	// Prompt is the rewritten prompt when the model enhanced it.
	Prompt            string `json:"prompt,omitempty"`
	RAIFilteredReason string `json:"raiFilteredReason,omitempty"`
}

// Image reports whether the prediction holds an image (a filtered one does not).
func (p *ImagenPrediction) Image() bool {
	return p.BytesBase64Encoded != "" || p.GCSURI != ""
}
