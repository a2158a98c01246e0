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
	const (
		outside = iota
		inString
	)
	state := outside
	key := false // the string being read is an object key
	for i := 0; i < len(src); i++ {
		c := src[i]
		if state == outside {
			dst[i] = ' '
			if c == '"' {
				state = inString
				key = isKey(src, i+1)
			}
			continue
		}
		switch {
		case c == '"':
			dst[i] = ' '
			state = outside
		case c == '\\':
			n := 2
			if i+1 < len(src) && src[i+1] == 'u' {
				n = 6
			}
			for j := 0; j < n && i+j < len(src); j++ {
				dst[i+j] = ' '
			}
			i += n - 1
		case key:
			dst[i] = ' '
		default:
			dst[i] = c
		}
	}
	return dst
}

// isKey reports whether the string starting at i (after its quote) is
// followed by a colon: an object key.
func isKey(src []byte, i int) bool {
	for ; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '"':
			for j := i + 1; j < len(src); j++ {
				switch src[j] {
				case ' ', '\t', '\n', '\r':
					continue
				case ':':
					return true
				}
				return false
			}
			return false
		}
	}
	return false
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
