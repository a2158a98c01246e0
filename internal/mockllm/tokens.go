package mockllm

import (
	"encoding/json"
	"strings"
)

// tokensOf is the documented token count of a text: ceil(bytes / 4).
func tokensOf(n int) int64 { return int64((n + 3) / 4) }

// part is a content part or block: OpenAI {"type":"text","text":…} or an
// Anthropic block, possibly with cache_control.
type part struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// content is a message content: a string or a list of parts.
type content struct {
	Text  string
	Parts []part
}

func (c *content) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &c.Text)
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &c.Parts)
}

// appendText appends the text of c to dst (text parts only).
func (c *content) appendText(dst []byte) []byte {
	dst = append(dst, c.Text...)
	for i := range c.Parts {
		if c.Parts[i].Type == "" || c.Parts[i].Type == "text" {
			dst = append(dst, c.Parts[i].Text...)
		}
	}
	return dst
}

// stringOrList is a string or a list of strings (completions prompt,
// embeddings input as text).
type stringOrList []string

func (s *stringOrList) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*s = stringOrList{one}
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// outputTokens is min(max_tokens, default) with max_tokens optional.
func outputTokens(maxTokens *int64, def int64) (n int64, capped bool) {
	if maxTokens != nil && *maxTokens >= 0 && *maxTokens < def {
		return *maxTokens, true
	}
	return def, false
}

// reply holds the words of a deterministic reply.
type reply struct {
	words []string
}

// newReply makes n words from the words of seed (documented in doc.go).
func newReply(seed string, n int64) reply {
	src := strings.Fields(seed)
	if len(src) == 0 {
		src = []string{"mock"}
	}
	words := make([]string, n)
	for i := range words {
		words[i] = src[i%len(src)]
	}
	return reply{words: words}
}

// text is the whole reply.
func (r reply) text() string { return strings.Join(r.words, " ") }

// chunks splits the reply into c content chunks (one per word when c is 0 or
// larger than the word count); chunks after the first start with a space.
// Each chunk also reports how many words it holds.
func (r reply) chunks(c int) (texts []string, words []int64) {
	n := len(r.words)
	if n == 0 {
		return nil, nil
	}
	if c <= 0 || c > n {
		c = n
	}
	texts = make([]string, c)
	words = make([]int64, c)
	for i := range c {
		lo, hi := i*n/c, (i+1)*n/c
		s := strings.Join(r.words[lo:hi], " ")
		if i > 0 {
			s = " " + s
		}
		texts[i] = s
		words[i] = int64(hi - lo)
	}
	return texts, words
}
