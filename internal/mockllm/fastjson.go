package mockllm

import (
	"bytes"
	"encoding/json"
	"io"
	"unicode/utf8"
)

// The requests of benchmarks (bench/loadgen) are small, plain JSON objects;
// decoding them with encoding/json's reflection was 40% of the mock's own
// CPU per request. decodeFast reads such a request by hand and gives up on
// anything it is not sure to read exactly as encoding/json would: other
// keys, keys in another case, duplicate keys, escapes or control characters
// in strings, numbers that are not plain integers, parts instead of text
// content. Then the request is decoded by encoding/json, as before, with the
// same result and the same error messages.

// maxFastBody is the largest body read whole for decodeFast.
const maxFastBody = 16 << 10

// errReader returns err: the end of a body whose read failed.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// decodeBody decodes the request body into v (*openAIRequest,
// *embeddingsRequest or any type encoding/json decodes).
func (c *call) decodeBody(v any) error {
	n := c.r.ContentLength
	if n < 0 || n > maxFastBody {
		return json.NewDecoder(c.r.Body).Decode(v)
	}
	buf := make([]byte, n)
	k, err := io.ReadFull(c.r.Body, buf)
	if err == nil && decodeFast(string(buf), v) {
		return nil
	}
	// What json.Decoder would have read from the body: the bytes, then
	// the error.
	var r io.Reader = bytes.NewReader(buf[:k])
	if err != nil {
		r = io.MultiReader(r, errReader{err})
	}
	return json.NewDecoder(r).Decode(v)
}

// decodeFast decodes s into v when it can do so exactly as encoding/json.
func decodeFast(s string, v any) bool {
	p := scanner{s: s}
	switch v := v.(type) {
	case *openAIRequest:
		var req openAIRequest
		if p.openAI(&req) {
			*v = req
			return true
		}
	case *embeddingsRequest:
		var req embeddingsRequest
		if p.embeddings(&req) {
			*v = req
			return true
		}
	}
	return false
}

// scanner reads JSON from s at i; every method reports false for what it
// does not read exactly as encoding/json.
type scanner struct {
	s string
	i int
}

func (p *scanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// byte consumes c after white space.
func (p *scanner) byte(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// lit consumes the literal w after white space.
func (p *scanner) lit(w string) bool {
	p.ws()
	if len(p.s)-p.i >= len(w) && p.s[p.i:p.i+len(w)] == w {
		p.i += len(w)
		return true
	}
	return false
}

// str reads a string without escapes or control characters, in valid UTF-8.
func (p *scanner) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	start, ascii := p.i, true
	for ; p.i < len(p.s); p.i++ {
		switch c := p.s[p.i]; {
		case c == '"':
			v := p.s[start:p.i]
			p.i++
			return v, ascii || utf8.ValidString(v)
		case c < 0x20 || c == '\\':
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// int reads a plain integer (no fraction, no exponent) of up to 18 digits.
func (p *scanner) int() (int64, bool) {
	p.ws()
	neg := p.i < len(p.s) && p.s[p.i] == '-'
	if neg {
		p.i++
	}
	start := p.i
	var n int64
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		n = n*10 + int64(p.s[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > 18 || (digits > 1 && p.s[start] == '0') {
		return 0, false
	}
	// A number ends at a delimiter, not at '.', 'e' or another character.
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r', ',', '}', ']':
		default:
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	return n, true
}

// optString reads a string, or null (which leaves *dst as it is).
func (p *scanner) optString(dst *string) bool {
	if p.lit("null") {
		return true
	}
	v, ok := p.str()
	*dst = v
	return ok
}

// optBool reads true, false or null (which leaves *dst as it is).
func (p *scanner) optBool(dst *bool) bool {
	switch {
	case p.lit("true"):
		*dst = true
	case p.lit("false"):
		*dst = false
	default:
		return p.lit("null")
	}
	return true
}

// optInt reads an integer into a new *int64, or null (nil).
func (p *scanner) optInt(dst **int64) bool {
	if p.lit("null") {
		*dst = nil
		return true
	}
	n, ok := p.int()
	*dst = &n
	return ok
}

// object reads an object whose keys are each read once by member, which
// returns the key's bit (0: unknown key, give up) after reading its value.
func (p *scanner) object(member func(key string) uint) bool {
	if !p.byte('{') {
		return false
	}
	if p.byte('}') {
		return true
	}
	var seen uint
	for {
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return false
		}
		bit := member(key)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if p.byte('}') {
			return true
		}
		if !p.byte(',') {
			return false
		}
	}
}

// openAI reads a chat completions request with text messages.
func (p *scanner) openAI(req *openAIRequest) bool {
	return p.object(func(key string) uint {
		var ok bool
		var bit uint
		switch key {
		case "model":
			ok, bit = p.optString(&req.Model), 1
		case "messages":
			ok, bit = p.messages(&req.Messages), 2
		case "stream":
			ok, bit = p.optBool(&req.Stream), 4
		case "max_tokens":
			ok, bit = p.optInt(&req.MaxTokens), 8
		case "max_completion_tokens":
			ok, bit = p.optInt(&req.MaxCompletionTokens), 16
		case "stream_options":
			ok, bit = p.streamOptions(&req.StreamOptions), 32
		}
		if !ok {
			return 0
		}
		return bit
	})
}

// messages reads null or an array of {"role":…,"content":"text"}.
func (p *scanner) messages(dst *[]chatMessage) bool {
	if p.lit("null") {
		*dst = nil
		return true
	}
	if !p.byte('[') {
		return false
	}
	msgs := make([]chatMessage, 0, 4)
	if !p.byte(']') {
		for {
			var m chatMessage
			ok := p.object(func(key string) uint {
				switch key {
				case "role":
					if p.optString(&m.Role) {
						return 1
					}
				case "content":
					if p.optString(&m.Content.Text) {
						return 2
					}
				}
				return 0
			})
			if !ok {
				return false
			}
			msgs = append(msgs, m)
			if p.byte(']') {
				break
			}
			if !p.byte(',') {
				return false
			}
		}
	}
	*dst = msgs
	return true
}

// streamOptions reads null or {"include_usage":bool}.
func (p *scanner) streamOptions(dst **streamOptions) bool {
	if p.lit("null") {
		*dst = nil
		return true
	}
	o := new(streamOptions)
	*dst = o
	return p.object(func(key string) uint {
		if key == "include_usage" && p.optBool(&o.IncludeUsage) {
			return 1
		}
		return 0
	})
}

// embeddings reads an embeddings request whose input is one string.
func (p *scanner) embeddings(req *embeddingsRequest) bool {
	return p.object(func(key string) uint {
		switch key {
		case "model":
			if p.optString(&req.Model) {
				return 1
			}
		case "input":
			p.ws()
			start := p.i
			if v, ok := p.str(); ok {
				req.Input = json.RawMessage(p.s[start:p.i])
				req.text, req.isText = v, true
				return 2
			}
		case "encoding_format":
			if p.optString(&req.EncodingFormat) {
				return 4
			}
		case "dimensions":
			if p.lit("null") {
				return 8
			}
			if n, ok := p.int(); ok {
				req.Dimensions = int(n)
				return 8
			}
		}
		return 0
	})
}
