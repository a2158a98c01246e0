package translate

import (
	"encoding/json"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Streamed image generations (POST /v1/images/generations with stream:
// true, OpenAI's gpt-image models; partial_images 0 to 3): the events pass
// to the client unchanged and are read as they pass —
// image_generation.partial_image carries a preview and no bill;
// image_generation.completed (image_edit.completed alike) one final image
// and, on a model billed by tokens, its usage. The request is settled from
// those: per completed image at a price per image; at its tokens on a model
// billed by tokens — the input (the prompt, read once) the largest any event
// reports, the output each image's summed, partial images included (they
// are billed in the image's output tokens). A stream cut before its first
// completed event is charged its bound, as a reply without usage is.

// imageStream is what a streamed image generation's events said.
type imageStream struct {
	sse    SSEParser
	images int64
	usage  kernel.Usage
	seen   bool // an event reported usage
}

// imageEvent is what is read of an image stream's event.
type imageEvent struct {
	Type  string `json:"type"`
	Usage *struct {
		InputTokens        int64 `json:"input_tokens"`
		OutputTokens       int64 `json:"output_tokens"`
		InputTokensDetails *struct {
			TextTokens  int64 `json:"text_tokens"`
			ImageTokens int64 `json:"image_tokens"`
		} `json:"input_tokens_details"`
	} `json:"usage"`
}

// feed reads the events of one chunk.
func (s *imageStream) feed(chunk []byte, eos bool) {
	_ = s.sse.FeedAll(chunk, eos, func(ev SSEEvent) { // a malformed line is passed, not billed
		var e imageEvent
		if json.Unmarshal(ev.Data, &e) != nil {
			return
		}
		switch e.Type {
		case "image_generation.completed", "image_edit.completed":
		default:
			return
		}
		s.images++
		u := e.Usage
		if u == nil {
			return
		}
		s.seen = true
		in, img := max(u.InputTokens, 0), int64(0)
		if d := u.InputTokensDetails; d != nil && d.TextTokens >= 0 && d.ImageTokens >= 0 && d.TextTokens+d.ImageTokens <= in {
			in, img = in-d.ImageTokens, d.ImageTokens
		}
		s.usage.Input = max(s.usage.Input, in)
		s.usage.CacheWrite = max(s.usage.CacheWrite, img)
		s.usage.Output += max(u.OutputTokens, 0)
	})
}

// imageStreamUsage is the usage of a streamed image generation (see above);
// ok is false when no completed event came (the bound is charged).
func (t *unitsOpenAI) imageStreamUsage() (kernel.Usage, bool) {
	s := &t.images
	if t.req != nil {
		t.req.Images = s.images
	}
	perImage := ImageOutputBound(t.unit.Quality) + t.unit.PartialImages*ImagePartialTokens
	switch {
	case t.unit.ByTokens && s.seen:
		return s.usage, true
	case t.unit.ByTokens:
		return kernel.Usage{Input: EstimateTokens(t.unit.Tokens), Output: t.unit.Bound * perImage}, false
	case s.images > 0:
		return kernel.Usage{Input: s.images}, true
	}
	return kernel.Usage{Input: t.unit.Bound}, false
}
