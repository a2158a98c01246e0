package guard

import "bytes"

// mask writes into dst (len(src)) the text the checks match: src itself when
// it is plain text; for a JSON document, its string values with everything
// else — structure, numbers, object keys — and every escape sequence
// replaced by spaces. Offsets in dst are offsets in src, so a match is
// replaced in src directly, and a placeholder (plain ASCII) never splits an
// escape. Strings are scanned as they appear; an invalid document is masked
// as far as it goes.
func mask(dst, src []byte, isJSON bool) []byte {
	dst = dst[:len(src)]
	copy(dst, src)
	if !isJSON {
		return dst
	}
	// Outside strings every byte is blanked; inside, only the escapes, found
	// with bytes.IndexByte between the quotes.
	lastStart, lastEnd := -1, -1 // the last string read: blanked if a ':' follows (a key)
	for i := 0; i < len(src); i++ {
		c := src[i]
		dst[i] = ' '
		if c != '"' {
			if c == ':' && lastStart >= 0 {
				blank(dst[lastStart:lastEnd])
				lastStart = -1
			} else if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				lastStart = -1
			}
			continue
		}
		j, q := i+1, i // q: the next quote at or after j (when q >= j)
		for j < len(src) {
			if q < j {
				if q = bytes.IndexByte(src[j:], '"'); q < 0 {
					q = len(src)
				} else {
					q += j
				}
			}
			b := bytes.IndexByte(src[j:q], '\\')
			if b < 0 {
				j = q
				break
			}
			j += b
			n := 2 // an escape: masked
			if j+1 < len(src) && src[j+1] == 'u' {
				n = 6
			}
			blank(dst[j:min(j+n, len(src))])
			j += n
		}
		lastStart, lastEnd = i+1, min(j, len(src))
		if j < len(src) {
			dst[j] = ' '
		}
		i = j
	}
	return dst
}

func blank(b []byte) {
	for i := range b {
		b[i] = ' '
	}
}

// maskSegment masks the raw (escaped) content of one JSON string: escape
// sequences become spaces. A segment may end inside an escape; the caller
// passes whole segments as the JSON string held them, so it never does.
func maskSegment(dst, src []byte) []byte {
	dst = dst[:len(src)]
	for i := 0; i < len(src); i++ {
		if src[i] != '\\' {
			dst[i] = src[i]
			continue
		}
		n := 2
		if i+1 < len(src) && src[i+1] == 'u' {
			n = 6
		}
		for j := 0; j < n && i+j < len(src); j++ {
			dst[i+j] = ' '
		}
		i += n - 1
	}
	return dst
}
