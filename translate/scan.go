package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// SyntaxError is a malformed JSON body; Offset is the byte where it was detected.
type SyntaxError struct {
	Offset int
	Line   int
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at line %d, column %d (byte %d): %s", e.Line, e.Column, e.Offset, e.Msg)
}

func syntaxErr(b []byte, off int, msg string) *SyntaxError {
	if off > len(b) {
		off = len(b)
	}
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return &SyntaxError{Offset: off, Line: line, Column: col, Msg: msg}
}

// Span is the byte range [start, end) of a JSON value; start < 0 means absent.
type Span struct{ Start, End int }

var absent = Span{-1, -1}

func (s Span) OK() bool               { return s.Start >= 0 }
func (s Span) bytes(b []byte) []byte  { return b[s.Start:s.End] }
func (s Span) IsNull(b []byte) bool   { return s.OK() && string(b[s.Start:s.End]) == "null" }
func (s Span) isObject(b []byte) bool { return s.OK() && b[s.Start] == '{' }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// ScanObject checks that b[i:] holds exactly one JSON object (and only
// whitespace after it when top is set) and calls fn with the raw key bytes
// (between the quotes) and the value span of every member, in order. It
// returns the offset just after the object.
func ScanObject(b []byte, i int, top bool, fn func(key []byte, v Span) error) (int, error) {
	i = SkipSpace(b, i)
	if i >= len(b) {
		return i, syntaxErr(b, i, "unexpected end of input, expected an object")
	}
	if b[i] != '{' {
		return i, syntaxErr(b, i, "expected an object")
	}
	end, err := scanMembers(b, i, 1, fn)
	if err != nil {
		return end, err
	}
	if top {
		if j := SkipSpace(b, end); j != len(b) {
			return j, syntaxErr(b, j, "unexpected data after the top-level value")
		}
	}
	return end, nil
}

// scanMembers scans the object starting at b[i] == '{'.
func scanMembers(b []byte, i, depth int, fn func(key []byte, v Span) error) (int, error) {
	if depth > maxJSONDepth {
		return i, syntaxErr(b, i, "exceeded maximum nesting depth")
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) {
			return i, syntaxErr(b, i, "unexpected end of input in object")
		}
		if b[i] != '"' {
			return i, syntaxErr(b, i, "expected a string key")
		}
		kend, err := skipString(b, i)
		if err != nil {
			return kend, err
		}
		key := b[i+1 : kend-1]
		i = SkipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxErr(b, i, "expected ':' after object key")
		}
		i = SkipSpace(b, i+1)
		vstart := i
		i, err = SkipValue(b, i, depth)
		if err != nil {
			return i, err
		}
		if fn != nil {
			if err := fn(key, Span{vstart, i}); err != nil {
				return vstart, err
			}
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, syntaxErr(b, i, "unexpected end of input in object")
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case '}':
			return i + 1, nil
		default:
			return i, syntaxErr(b, i, "expected ',' or '}' in object")
		}
	}
}

// SkipValue validates the value at b[i] and returns the offset after it.
func SkipValue(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return i, syntaxErr(b, i, "unexpected end of input, expected a value")
	}
	switch c := b[i]; {
	case c == '{':
		return scanMembers(b, i, depth+1, nil)
	case c == '[':
		return skipArray(b, i, depth+1)
	case c == '"':
		return skipString(b, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(b, i)
	case c == 't':
		return skipLiteral(b, i, "true")
	case c == 'f':
		return skipLiteral(b, i, "false")
	case c == 'n':
		return skipLiteral(b, i, "null")
	default:
		return i, syntaxErr(b, i, fmt.Sprintf("invalid character %q looking for a value", c))
	}
}

func skipArray(b []byte, i, depth int) (int, error) {
	if depth > maxJSONDepth {
		return i, syntaxErr(b, i, "exceeded maximum nesting depth")
	}
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		i, err = SkipValue(b, i, depth)
		if err != nil {
			return i, err
		}
		i = SkipSpace(b, i)
		if i >= len(b) {
			return i, syntaxErr(b, i, "unexpected end of input in array")
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			return i + 1, nil
		default:
			return i, syntaxErr(b, i, "expected ',' or ']' in array")
		}
	}
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit), nil
	}
	return i, syntaxErr(b, i, "invalid literal, expected "+lit)
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipString validates the string at b[i] == '"' and returns the offset after
// the closing quote. Linear: each byte is searched once (vectorised), however
// many escapes the string holds.
func skipString(b []byte, i int) (int, error) {
	i++
	q := -1 // absolute offset of the next '"' at or after i (len(b) if none)
	for {
		if q < i {
			if k := bytes.IndexByte(b[i:], '"'); k >= 0 {
				q = i + k
			} else {
				q = len(b)
			}
		}
		j := q
		if k := bytes.IndexByte(b[i:q], '\\'); k >= 0 {
			j = i + k
		}
		if k := firstControl(b[i:j]); k >= 0 {
			return i + k, syntaxErr(b, i+k, "invalid control character in string")
		}
		if j >= len(b) {
			return len(b), syntaxErr(b, len(b), "unexpected end of input in string")
		}
		if b[j] == '"' {
			return j + 1, nil
		}
		// escape at j
		if j+1 >= len(b) {
			return len(b), syntaxErr(b, len(b), "unexpected end of input in string escape")
		}
		switch b[j+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = j + 2
		case 'u':
			if len(b)-j < 6 || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
				return j, syntaxErr(b, j, "invalid \\u escape in string")
			}
			i = j + 6
		default:
			return j, syntaxErr(b, j, "invalid escape in string")
		}
	}
}

func firstControl(b []byte) int {
	for k, c := range b {
		if c < 0x20 {
			return k
		}
	}
	return -1
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipNumber(b []byte, i int) (int, error) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, syntaxErr(b, i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, syntaxErr(b, i, "invalid number: expected a digit after '.'")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, syntaxErr(b, i, "invalid number: expected a digit in exponent")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

// KeyIs reports whether the raw key bytes (escapes not decoded) name want.
// Keys with escapes are decoded first, so "mod\u0065l" is "model".
func KeyIs(raw []byte, want string) bool {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == want
	}
	s, ok := decodeString(raw)
	return ok && s == want
}

// decodeString decodes the raw contents of a JSON string (between the quotes).
func decodeString(raw []byte) (string, bool) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), true
	}
	// Escapes or invalid UTF-8 (replaced by U+FFFD, as encoding/json does).
	q := make([]byte, 0, len(raw)+2)
	q = append(q, '"')
	q = append(q, raw...)
	q = append(q, '"')
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		return "", false
	}
	return s, true
}

// StringValue returns the string held by the value span, ok=false when the value
// is not a string.
func StringValue(b []byte, v Span) (string, bool) {
	if !v.OK() || b[v.Start] != '"' {
		return "", false
	}
	return decodeString(b[v.Start+1 : v.End-1])
}

// intValue returns the non-negative integer held by the span (an integral
// number such as 12 or 12.0 or 1e3); ok=false otherwise.
func intValue(b []byte, v Span) (int64, bool) {
	if !v.OK() {
		return 0, false
	}
	raw := b[v.Start:v.End]
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, n >= 0
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f < 0 || f > 1<<53 || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// edit replaces b[start:end] with text (an insertion when start == end).
type edit struct {
	start, end int
	text       []byte
}

// applyEdits returns b with the edits applied; edits must be sorted by start
// and must not overlap. b is not modified.
func applyEdits(b []byte, edits []edit) []byte {
	n := len(b)
	for _, e := range edits {
		n += len(e.text) - (e.end - e.start)
	}
	out := make([]byte, 0, n)
	prev := 0
	for _, e := range edits {
		out = append(out, b[prev:e.start]...)
		out = append(out, e.text...)
		prev = e.end
	}
	return append(out, b[prev:]...)
}

// appendJSONString appends s as a JSON string literal.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			switch c {
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}

// TextBytes estimates the text in a JSON document (a request body or one
// streamed event): the bytes of the string values of the members named
// content, reasoning_content, reasoning, arguments, refusal and text, at any
// depth (chat delta content, reasoning, tool arguments, refusals, text blocks,
// completions text). It is an estimate, not a validation: one pass over the
// document's strings, each skipped once, so its cost is one scan of the bytes
// whatever the number of names (a search per name scanned the body six times).
// Used only to estimate tokens when the provider reports no usage.
func TextBytes(data []byte) int64 {
	var n int64
	i := 0
	for i < len(data) {
		k := bytes.IndexByte(data[i:], '"')
		if k < 0 {
			break
		}
		start := i + k
		end := stringEnd(data, start)
		if end < 0 {
			break
		}
		i = end
		if !isTextKey(data[start+1 : end-1]) {
			continue
		}
		j := SkipSpace(data, end)
		if j >= len(data) || data[j] != ':' {
			continue
		}
		j = SkipSpace(data, j+1)
		if j >= len(data) || data[j] != '"' {
			continue
		}
		vend := stringEnd(data, j)
		if vend < 0 {
			break
		}
		n += int64(vend - j - 2)
		i = vend
	}
	return n
}

// isTextKey reports whether a member name (between its quotes) is one whose
// string value textBytes counts.
func isTextKey(k []byte) bool {
	switch string(k) {
	case "content", "reasoning_content", "reasoning", "arguments", "refusal", "text":
		return true
	}
	return false
}

// stringEnd is the offset just past the closing quote of the string that
// opens at b[i], or -1 when it is not closed. Unlike skipString it does not
// validate escapes or control characters: it only finds the first quote not
// escaped by an odd run of backslashes.
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		k := bytes.IndexByte(b[i:], '"')
		if k < 0 {
			return -1
		}
		i += k
		bs := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			bs++
		}
		if bs%2 == 0 {
			return i + 1
		}
	}
	return -1
}
