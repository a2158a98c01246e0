package translate

import (
	"encoding/json"
	"math"
	"unicode/utf8"

	"github.com/tollgate-ai/tollgate/kernel"
)

// The client APIs charged per unit rather than per token (#34): images,
// audio, moderations and rerank. Their requests carry a UnitRequest; their
// translators report the units in Usage.Input, which the processor charges
// at the unit's price (kernel.PerUnit).
const (
	APIImages         API = "openai.images.generations"   // POST /v1/images/generations
	APIImageEdits     API = "openai.images.edits"         // POST /v1/images/edits (multipart)
	APIModerations    API = "openai.moderations"          // POST /v1/moderations
	APISpeech         API = "openai.audio.speech"         // POST /v1/audio/speech
	APITranscriptions API = "openai.audio.transcriptions" // POST /v1/audio/transcriptions (multipart)
	APITranslations   API = "openai.audio.translations"   // POST /v1/audio/translations (multipart)
	APIRerank         API = "rerank"                      // POST /v1/rerank (Cohere's and Jina's shape)
)

// UnitRequest is what a request of a route charged per unit asks for.
type UnitRequest struct {
	// Unit the request is charged in: set by the parser to the route's
	// natural unit, and by the processor to the unit the model's price
	// names (a rerank model priced per token is charged in tokens).
	Unit kernel.Unit
	// Bound is the most units the request can be charged: n images, the
	// characters to speak, the search units of the documents, the seconds
	// of audio estimated from the upload, the estimated input tokens.
	Bound int64
	// Size and Quality of the images asked for ("" when not named).
	Size, Quality string
	// Tokens bounds the request in input tokens (its bytes): the bound
	// when a model of the route is priced per token instead.
	Tokens int64
	// Searches are a rerank's search units, its Bound while it is charged in
	// searches: a rerank may be charged per token instead when the model's
	// price names no search price, and each deployment it is admitted on
	// prices it anew from these (0 on the other routes).
	Searches int64
	// Unpriced: the model has no price in the request's unit (set at
	// admission); the ledger marks the row.
	Unpriced bool
	// ByTokens: the image model bills by tokens (gpt-image-1,
	// kernel.Price.ImageTokens; set at admission): the reply's usage is
	// charged, text input, image input (in the CacheWrite slot) and image
	// output tokens, and the ledger's quantity is Images.
	ByTokens bool
	// Images is how many images the reply held (set by the translator of
	// a request charged ByTokens).
	Images int64
	// ModelValue locates the model field's value in a multipart body
	// ([start, end), -1 when not in sight), for RewriteMultipartModel.
	ModelValue [2]int
	// Partial: the processor saw only the body's first bytes (a large
	// upload); the rest goes to the provider unseen and unchanged.
	Partial bool
	// Boundary is a multipart body's boundary (its content type's), for a
	// translator that reads the whole form (an edit on Imagen).
	Boundary string
	// PartialImages is a streamed generation's partial_images (0 to 3):
	// each costs an image's worth more output tokens on a model billed by
	// tokens (ImagePartialTokens).
	PartialImages int64
}

// Most units one request may ask for; beyond them the request is refused
// (OpenAI's own limits: n ≤ 10 images, 4096 characters of speech).
const (
	maxImages       = 10
	maxSpeechChars  = 4096
	rerankPerSearch = 100 // documents per Cohere search unit
	// maxPartialImages is the most partial images a streamed generation
	// may ask for (OpenAI's partial_images, 0 to 3).
	maxPartialImages = 3
)

// unitBody is every member the JSON unit routes read.
type unitBody struct {
	N              *int64          `json:"n"`
	Size           string          `json:"size"`
	Quality        string          `json:"quality"`
	Input          json.RawMessage `json:"input"`
	Query          json.RawMessage `json:"query"`
	Documents      []any           `json:"documents"`
	ResponseFormat string          `json:"response_format"`
	PartialImages  *int64          `json:"partial_images"`
}

// ParseUnitRequest parses the JSON request of a unit API: the common
// members (ParseRequest) and what its units are counted from.
func ParseUnitRequest(api API, body []byte) (*Inbound, error) {
	in, err := ParseRequest(api, body)
	if err != nil {
		return nil, err
	}
	if in.Stream && api != APIImages { // a streamed generation: image_generation.* events
		return nil, &fieldError{"stream", "is not supported by this gateway on " + string(api)}
	}
	var b unitBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, &fieldError{"body", err.Error()}
	}
	u := &UnitRequest{Tokens: int64(len(body))}
	switch api {
	case APIImages:
		u.Unit, u.Bound, u.Size, u.Quality = kernel.UnitImages, 1, b.Size, b.Quality
		if b.N != nil {
			if *b.N < 1 || *b.N > maxImages {
				return nil, &fieldError{"n", "must be an integer from 1 to 10"}
			}
			u.Bound = *b.N
		}
		if b.PartialImages != nil {
			if *b.PartialImages < 0 || *b.PartialImages > maxPartialImages {
				return nil, &fieldError{"partial_images", "must be an integer from 0 to 3"}
			}
			if in.Stream {
				u.PartialImages = *b.PartialImages
			}
		}
	case APISpeech:
		var s string
		if json.Unmarshal(b.Input, &s) != nil || s == "" {
			return nil, &fieldError{"input", "must be a non-empty string"}
		}
		n := int64(utf8.RuneCountInString(s))
		if n > maxSpeechChars {
			return nil, &fieldError{"input", "must be at most 4096 characters"}
		}
		u.Unit, u.Bound = kernel.UnitCharacters, n
	case APIModerations:
		if len(b.Input) == 0 {
			return nil, &fieldError{"input", "is required"}
		}
		u.Unit, u.Bound = kernel.UnitTokens, EstimateTokens(int64(len(b.Input)))
	case APIRerank:
		if len(b.Query) == 0 {
			return nil, &fieldError{"query", "is required"}
		}
		if len(b.Documents) == 0 {
			return nil, &fieldError{"documents", "must be a non-empty array"}
		}
		u.Searches = (int64(len(b.Documents)) + rerankPerSearch - 1) / rerankPerSearch
		u.Unit, u.Bound = kernel.UnitSearches, u.Searches
	default:
		return nil, &fieldError{"body", "is not JSON on " + string(api)}
	}
	in.Unit = u
	return in, nil
}

// unitOps are the OpenAI operations of the unit APIs.
var unitOps = map[API]openAIOp{
	APIImages:         {path: "/images/generations"},
	APIImageEdits:     {path: "/images/edits"},
	APIModerations:    {path: "/moderations"},
	APISpeech:         {path: "/audio/speech"},
	APITranscriptions: {path: "/audio/transcriptions"},
	APITranslations:   {path: "/audio/translations"},
	APIRerank:         {path: "/rerank"},
}

// unitsOpenAI serves a unit API from OpenAI, an OpenAI-compatible server
// (Jina's and Cohere's compatible rerank among them) or Azure OpenAI: the
// request goes as the client sent it, the model renamed (JSON bodies), the
// reply comes back unchanged, and its units are read from it.
type unitsOpenAI struct {
	openAIFormat
	api   API
	azure bool
	unit  UnitRequest
	req   *UnitRequest // the request's own, told how many images came back
	// images reads a streamed image generation's events (images_stream.go).
	images imageStream
}

var _ Translator = (*unitsOpenAI)(nil)

// Request sets the operation's path and the provider's credential; a JSON
// body has its model renamed, a multipart one goes unchanged (the provider
// reads the model from the path on Azure, and an OpenAI-compatible server
// is named by its own model there).
func (t *unitsOpenAI) Request(in *Inbound, target *Target) (*Outbound, error) {
	if in.Unit != nil {
		t.unit, t.req = *in.Unit, in.Unit
	}
	op := unitOps[t.api]
	t.apiKey = target.APIKey
	out := &Outbound{}
	switch {
	case !multipartAPI(t.api):
		out.Body = t.rewrite(in, op, target.ProviderModel)
	case in.Unit != nil && !t.azure && !t.unit.Partial && target.ProviderModel != "":
		// The whole form is in hand: the provider's model name. (A large
		// upload's tail is not, and its length is fixed: its model goes as
		// the client named it; docs/endpoints.md.)
		out.Body = RewriteMultipartModel(in.Body, t.unit.ModelValue, target.ProviderModel)
	}
	out.Path, out.Headers = openAIUpstream(target, op, t.azure)
	return out, nil
}

// unitReply is every member the units are read from.
type unitReply struct {
	Data     []json.RawMessage `json:"data"`
	Duration *float64          `json:"duration"` // transcriptions' verbose_json
	Usage    *struct {
		Type               string   `json:"type"`    // transcriptions: "duration" or "tokens"
		Seconds            *float64 `json:"seconds"` // transcriptions' duration usage
		InputTokens        int64    `json:"input_tokens"`
		InputTokensDetails *struct {
			TextTokens  int64 `json:"text_tokens"`
			ImageTokens int64 `json:"image_tokens"`
		} `json:"input_tokens_details"` // images of a model billed by tokens
		OutputTokens int64 `json:"output_tokens"`
		PromptTokens int64 `json:"prompt_tokens"`
		TotalTokens  int64 `json:"total_tokens"` // Jina's rerank
	} `json:"usage"`
	Meta *struct {
		BilledUnits *struct {
			SearchUnits *int64 `json:"search_units"`
		} `json:"billed_units"`
	} `json:"meta"` // Cohere's rerank
}

// Response passes the reply and reads its units; a reply that reports
// none is charged the request's bound (n images, the seconds estimated from
// the upload, the search units of the documents).
func (t *unitsOpenAI) Response(body []byte) ([]byte, kernel.Usage, error) {
	if t.unit.ByTokens {
		return body, t.imageTokens(body), nil
	}
	n, ok := t.units(body)
	if !ok {
		n = t.unit.Bound
	}
	return body, kernel.Usage{Input: n}, nil
}

// units reads the units of a reply in the request's unit.
func (t *unitsOpenAI) units(body []byte) (int64, bool) {
	if t.unit.Unit == kernel.UnitCharacters { // the reply is the audio: the input was the bill
		return t.unit.Bound, true
	}
	var r unitReply
	if json.Unmarshal(body, &r) != nil {
		return 0, false
	}
	switch t.unit.Unit {
	case kernel.UnitImages:
		if r.Data == nil {
			return 0, false
		}
		return int64(len(r.Data)), true
	case kernel.UnitSeconds:
		switch {
		case r.Duration != nil:
			return ceilSeconds(*r.Duration), true
		case r.Usage != nil && r.Usage.Seconds != nil:
			return ceilSeconds(*r.Usage.Seconds), true
		}
	case kernel.UnitSearches:
		if r.Meta != nil && r.Meta.BilledUnits != nil && r.Meta.BilledUnits.SearchUnits != nil {
			return *r.Meta.BilledUnits.SearchUnits, true
		}
	case kernel.UnitTokens:
		if r.Usage != nil {
			return max(r.Usage.TotalTokens, r.Usage.InputTokens+r.Usage.OutputTokens, r.Usage.PromptTokens), true
		}
		if t.api == APIModerations && r.Data == nil { // OpenAI's moderations report no usage
			return t.unit.Bound, true
		}
	}
	return 0, false
}

// imageTokens reads the usage of an image model billed by tokens
// (gpt-image-1): input_tokens split by input_tokens_details into text
// (Input) and image tokens (CacheWrite, kernel.Price.ImageTokens), output
// tokens (Output); and how many images the reply holds. A reply without a
// usage is charged its bound: the request's bytes as text tokens, each image
// at the most tokens of its quality (ImageOutputBound).
func (t *unitsOpenAI) imageTokens(body []byte) kernel.Usage {
	var r unitReply
	if json.Unmarshal(body, &r) != nil {
		r = unitReply{}
	}
	if t.req != nil {
		t.req.Images = int64(len(r.Data))
	}
	if r.Usage == nil {
		n := t.unit.Bound
		if r.Data != nil {
			n = int64(len(r.Data))
		}
		return kernel.Usage{Input: EstimateTokens(t.unit.Tokens), Output: n * ImageOutputBound(t.unit.Quality)}
	}
	u := kernel.Usage{Input: max(r.Usage.InputTokens, 0), Output: max(r.Usage.OutputTokens, 0)}
	if d := r.Usage.InputTokensDetails; d != nil && d.TextTokens >= 0 && d.ImageTokens >= 0 && d.TextTokens+d.ImageTokens <= u.Input {
		// Tokens the details do not place are counted at the text price.
		u.Input, u.CacheWrite = u.Input-d.ImageTokens, d.ImageTokens
	}
	return u
}

// ImageOutputBound is the most output tokens one image of an image model
// billed by tokens may cost, by the request's quality: gpt-image-1 bills at
// most 408 tokens an image at low quality, 1584 at medium and 6240 at high
// (OpenAI's image generation guide, sizes up to 1536x1024), with room for
// the larger sizes of later models; auto or no quality is the high bound.
func ImageOutputBound(quality string) int64 {
	switch quality {
	case "low":
		return 512
	case "medium":
		return 2048
	}
	return 8192
}

// ImagePartialTokens is what each partial image of a streamed generation
// adds to an image's output tokens on a model billed by tokens (OpenAI's
// image generation guide: 100 image output tokens a partial image).
const ImagePartialTokens = 100

// ceilSeconds is a duration in seconds rounded up (a provider bills a
// started second).
func ceilSeconds(s float64) int64 {
	if s <= 0 || math.IsNaN(s) {
		return 0
	}
	if s >= math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return int64(math.Ceil(s))
}

// StreamChunk passes the bytes of a streamed reply (speech's audio, a
// streamed image generation's events, read as they pass: images_stream.go).
func (t *unitsOpenAI) StreamChunk(chunk []byte, eos bool) ([]byte, error) {
	if t.unit.Unit == kernel.UnitImages {
		t.images.feed(chunk, eos)
	}
	return chunk, nil
}

// StreamUsage is the bound: a streamed reply (audio) carries no usage, and
// speech is billed by its input; a streamed image generation's is what its
// completed events reported.
func (t *unitsOpenAI) StreamUsage() (kernel.Usage, bool) {
	if t.unit.Unit == kernel.UnitImages {
		return t.imageStreamUsage()
	}
	return kernel.Usage{Input: t.unit.Bound}, t.unit.Unit == kernel.UnitCharacters
}

// newUnitsOpenAI makes the translator of a unit API.
func newUnitsOpenAI(api API, azure bool) TranslatorFactory {
	return func() Translator { return &unitsOpenAI{api: api, azure: azure} }
}

// multipartAPI reports whether api's requests are multipart/form-data.
func multipartAPI(api API) bool {
	return api == APIImageEdits || api == APITranscriptions || api == APITranslations
}
