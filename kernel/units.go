package kernel

import (
	"math"
	"strings"
)

// Unit is what a request of a route is counted and charged in: the ledger
// row's unit, with its quantity. Token routes are UnitTokens; the routes of
// images, audio, rerank and calls priced per call count their own (#34).
type Unit string

// Units.
const (
	UnitTokens     Unit = "tokens"
	UnitImages     Unit = "images"     // generated or edited images
	UnitSeconds    Unit = "seconds"    // seconds of transcribed or translated audio
	UnitCharacters Unit = "characters" // characters of speech input
	UnitSearches   Unit = "searches"   // rerank search units
	UnitCalls      Unit = "calls"      // calls priced per call (pass-through)
)

// UnitPrices are the prices of a model's non-token units, in nano-dollars
// per unit (not per million, unlike Price's token prices).
type UnitPrices struct {
	// Image is the price of one image by "SIZE/QUALITY" ("1024x1024/hd"),
	// "SIZE" (any quality), "*/QUALITY" (any size) or "*" (any image),
	// looked up in that order (ImagePrice).
	Image map[string]Money `json:"image,omitempty"`
	// Second of audio transcribed or translated.
	Second Money `json:"second,omitempty"`
	// Character of text spoken (text to speech).
	Character Money `json:"character,omitempty"`
	// Search unit of a rerank (Cohere: one query over up to 100 documents).
	Search Money `json:"search,omitempty"`
	// ImageInputTokens and ImageOutputTokens price an image model billed by
	// tokens (gpt-image-1), per million image tokens like Price's token
	// prices; its text input tokens are priced at Price.Input (CachedInput).
	// Either set makes the model's images charged by tokens (ImageTokens).
	ImageInputTokens  Money `json:"image_input_tokens,omitempty"`
	ImageOutputTokens Money `json:"image_output_tokens,omitempty"`
}

// ImageTokens is the token price of an image model billed by tokens: text
// input tokens at Input (cached ones at CachedInput), image input tokens in
// the CacheWrite slot at ImageInputTokens, image output tokens at
// ImageOutputTokens. An image request charged by tokens reports Usage{Input:
// text, CachedInput: cached text, CacheWrite: image input, Output: image
// output}: images have no prompt cache to write, so the slot is free, and
// the kernel's one rounding per request and its bounds (WorstCost) hold
// unchanged. ok is false when the model has no image token price.
func (p Price) ImageTokens() (Price, bool) {
	if p.Units == nil || p.Units.ImageInputTokens <= 0 && p.Units.ImageOutputTokens <= 0 {
		return Price{}, false
	}
	in := max(p.Units.ImageInputTokens, 0)
	if in == 0 { // a zero price means the text input price, as CacheWrite's does
		in = p.Input
	}
	out := max(p.Units.ImageOutputTokens, 0)
	if out == 0 { // likewise the text output price
		out = p.Output
	}
	return Price{Input: p.Input, CachedInput: p.CachedInput, CacheWrite: in, Output: out}, true
}

// ImagePrice is the price of one image of size and quality ("" when the
// request names none): the first of Image["SIZE/QUALITY"], Image["SIZE"],
// Image["*/QUALITY"] and Image["*"] that is set. ok is false when none is.
func (p Price) ImagePrice(size, quality string) (m Money, ok bool) {
	if p.Units == nil || len(p.Units.Image) == 0 {
		return 0, false
	}
	size, quality = strings.ToLower(size), strings.ToLower(quality)
	keys := [4]string{"", size, "", "*"}
	if quality != "" {
		keys[0], keys[2] = size+"/"+quality, "*/"+quality
	}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if m, ok := p.Units.Image[k]; ok {
			return max(m, 0), true
		}
	}
	return 0, false
}

// UnitPrice is the price of one unit u (seconds, characters, searches);
// ok is false when the price names none. Images are priced by ImagePrice.
func (p Price) UnitPrice(u Unit) (m Money, ok bool) {
	if p.Units == nil {
		return 0, false
	}
	switch u {
	case UnitSeconds:
		m = p.Units.Second
	case UnitCharacters:
		m = p.Units.Character
	case UnitSearches:
		m = p.Units.Search
	}
	return max(m, 0), m > 0
}

// PerUnit is the Price that charges each input "token" at per: a request of
// a non-token unit is admitted and settled as Usage{Input: quantity} at this
// price, so its reservation (quantity bound × per) and its cost (quantity ×
// per) are the kernel's token arithmetic, exact. Beyond Money's range per
// saturates.
func PerUnit(per Money) Price {
	if per <= 0 {
		return Price{}
	}
	if per > math.MaxInt64/tokensPerPrice {
		return Price{Input: math.MaxInt64}
	}
	return Price{Input: per * tokensPerPrice}
}
