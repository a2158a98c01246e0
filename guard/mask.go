package guard

// mask writes into dst (len(src)) the text the checks match: src itself when
// it is plain text; for a JSON document, its string values with everything
// else — structure, numbers, object keys — and every escape sequence
// replaced by spaces. Offsets in dst are offsets in src, so a match is
// replaced in src directly, and a placeholder (plain ASCII) never splits an
// escape. Strings are scanned as they appear; an invalid document is masked
// as far as it goes.
func mask(dst, src []byte, isJSON bool) []byte {
	dst = dst[:len(src)]
	if !isJSON {
		copy(dst, src)
		return dst
	}
	lastStart, lastEnd := -1, -1 // the last string read: blanked if a ':' follows (a key)
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c != '"' {
			dst[i] = ' '
			if c == ':' && lastStart >= 0 {
				for j := lastStart; j < lastEnd; j++ {
					dst[j] = ' '
				}
				lastStart = -1
			} else if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				lastStart = -1
			}
			continue
		}
		dst[i] = ' '
		j := i + 1
		for j < len(src) {
			// Copy the run up to the next quote or backslash.
			k := j
			for k < len(src) && src[k] != '"' && src[k] != '\\' {
				k++
			}
			copy(dst[j:k], src[j:k])
			j = k
			if j >= len(src) || src[j] == '"' {
				break
			}
			n := 2 // an escape: masked
			if j+1 < len(src) && src[j+1] == 'u' {
				n = 6
			}
			for e := j; e < j+n && e < len(src); e++ {
				dst[e] = ' '
			}
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
