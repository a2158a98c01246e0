package guard

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// TypeWord is the placeholder of the words kind.
const TypeWord = "BLOCKED_WORD"

// wordFinder matches blocked words (ASCII case-insensitive, whole words) and
// regular expressions.
type wordFinder struct {
	words    [][]byte // lower case
	patterns []*regexp.Regexp
}

func newWordFinder(words, patterns []string) (*wordFinder, error) {
	f := &wordFinder{}
	for _, w := range words {
		if w = strings.TrimSpace(w); w != "" {
			f.words = append(f.words, []byte(strings.ToLower(w)))
		}
	}
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("%w: pattern %q: %w", ErrInvalid, p, err)
		}
		f.patterns = append(f.patterns, re)
	}
	if len(f.words)+len(f.patterns) == 0 {
		return nil, fmt.Errorf("%w: words needs at least one word or pattern", ErrInvalid)
	}
	return f, nil
}

func (f *wordFinder) find(text []byte, dst []Finding) []Finding {
	if len(f.words) > 0 {
		lower := asciiLower(text)
		for _, w := range f.words {
			from := 0
			for {
				i := bytes.Index(lower[from:], w)
				if i < 0 {
					break
				}
				i += from
				e := i + len(w)
				from = i + 1
				if wordChar(before(lower, i)) && wordChar(w[0]) || wordChar(at(lower, e)) && wordChar(w[len(w)-1]) {
					continue
				}
				dst = append(dst, Finding{TypeWord, i, e})
				from = e
			}
		}
	}
	for _, re := range f.patterns {
		for _, m := range re.FindAllIndex(text, -1) {
			if m[1] > m[0] {
				dst = append(dst, Finding{TypeWord, m[0], m[1]})
			}
		}
	}
	return dst
}

// asciiLower lowers A–Z only, so offsets stay those of text.
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if isUpper(c) {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// TypeSize is the type of a size guardrail's match.
const TypeSize = "SIZE"

// sizeFinder matches a text longer than its limit (the whole text).
type sizeFinder int

func (n sizeFinder) find(text []byte, dst []Finding) []Finding {
	if len(text) > int(n) {
		dst = append(dst, Finding{TypeSize, 0, len(text)})
	}
	return dst
}
