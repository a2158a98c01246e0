package guard

// The detectors and mask as they were before the one-pass prefilter
// (scan.go): the reference FuzzEquivalent compares the fast ones with.

import (
	"bytes"
	"strings"
)

// digitStarts calls f at each digit that starts a number (not preceded by a
// word character, a dot or a digit group separator glued to a digit).
func refDigitStarts(text []byte, f func(i int) int) {
	for i := 0; i < len(text); i++ {
		if !isDigit(text[i]) {
			continue
		}
		p := before(text, i)
		if wordChar(p) || p == '.' || p == '-' && isDigit(before(text, i-1)) {
			for i < len(text) && isDigit(text[i]) {
				i++
			}
			continue
		}
		if n := f(i); n > i {
			i = n - 1
		} else {
			for i+1 < len(text) && isDigit(text[i+1]) {
				i++
			}
		}
	}
}

// findCards: 13–19 digits, alone or in groups separated by single spaces or
// dashes, of a known issuer and passing the Luhn check.
func refFindCards(text []byte, dst []Finding) []Finding {
	var groups [8]int
	var digits [24]byte
	refDigitStarts(text, func(i int) int {
		e, g := refDigitRun(text, i, " -", groups[:0])
		if !endsNumber(text, e) {
			return e
		}
		n := 0
		for _, k := range g {
			n += k
		}
		if n < 13 || n > 19 || len(g) > 1 && (g[0] != 4 || len(g) > 5) {
			return e
		}
		d := digits[:0]
		for _, c := range text[i:e] {
			if isDigit(c) {
				d = append(d, c)
			}
		}
		if cardPrefix(d) && luhn(d) {
			dst = append(dst, Finding{TypeCreditCard, i, e})
		}
		return e
	})
	return dst
}

// findSSNs: AAA-GG-SSSS with the Social Security Administration's rules:
// area not 000, 666 or 9xx, group not 00, serial not 0000.
func refFindSSNs(text []byte, dst []Finding) []Finding {
	var groups [4]int
	refDigitStarts(text, func(i int) int {
		e, g := refDigitRun(text, i, "-", groups[:0])
		if len(g) != 3 || g[0] != 3 || g[1] != 2 || g[2] != 4 || !endsNumber(text, e) {
			return e
		}
		area, grp, ser := text[i:i+3], text[i+4:i+6], text[i+7:i+11]
		if string(area) == "000" || string(area) == "666" || area[0] == '9' ||
			string(grp) == "00" || string(ser) == "0000" {
			return e
		}
		dst = append(dst, Finding{TypeSSN, i, e})
		return e
	})
	return dst
}

// findPhones: international numbers written with their "+" and country code
// (8 to 15 digits, E.164), and North American numbers in their written forms
// (555-123-4567, 555.123.4567, (555) 123-4567, 1-555-123-4567). A bare run of
// digits is not a phone number here: too many identifiers look like one.
func refFindPhones(text []byte, dst []Finding) []Finding {
	for i := 0; i < len(text); i++ {
		c := text[i]
		var e int
		var ok bool
		switch {
		case c == '+' && isDigit(at(text, i+1)) && !wordChar(before(text, i)):
			e, ok = intlPhone(text, i)
		case c == '(' && isDigit(at(text, i+1)) && !wordChar(before(text, i)):
			e, ok = refNanpParen(text, i)
		case isDigit(c) && !wordChar(before(text, i)) && before(text, i) != '.' && before(text, i) != '-' && before(text, i) != '+':
			e, ok = refNanpPlain(text, i)
		default:
			continue
		}
		switch {
		case ok:
			dst = append(dst, Finding{TypePhone, i, e})
			i = e - 1
		case e > i: // not a phone: skip the whole run (linear time)
			i = e - 1
		default:
			for i+1 < len(text) && isDigit(text[i+1]) {
				i++
			}
		}
	}
	return dst
}

// findIBANs: a country code, two check digits and the account (upper-case
// letters and digits, in groups of four separated by single spaces or
// written together), of the country's length and passing ISO 7064 mod 97-10.
func refFindIBANs(text []byte, dst []Finding) []Finding {
	var buf [40]byte
	for i := 0; i+15 <= len(text); i++ {
		if !isUpper(text[i]) || !isUpper(text[i+1]) || !isDigit(text[i+2]) || !isDigit(text[i+3]) || wordChar(before(text, i)) {
			continue
		}
		want, ok := ibanLengths[string(text[i:i+2])]
		if !ok {
			continue
		}
		b := buf[:0]
		j, end := i, i
		for j < len(text) && len(b) < want {
			c := text[j]
			switch {
			case isUpper(c) || isDigit(c):
				b = append(b, c)
				j++
				end = j
			case c == ' ' && len(b)%4 == 0 && len(b) > 0 && j+1 < len(text) && (isUpper(text[j+1]) || isDigit(text[j+1])):
				j++
			default:
				goto done
			}
		}
	done:
		if len(b) != want || wordChar(at(text, end)) || !mod97(b) {
			continue
		}
		dst = append(dst, Finding{TypeIBAN, i, end})
		i = end - 1
	}
	return dst
}

// findIPs: dotted-quad IPv4 (each part 0–255, no leading zeros, not part of a
// longer dotted number such as a version) and IPv6 (at least two colons, as
// net/netip parses it; a time such as 12:30:45 does not).
func refFindIPs(text []byte, dst []Finding) []Finding {
	// Anchored on the separators, rare in prose: each '.' or ':' with a hex
	// digit or ':' beside it, expanded to its run of address characters.
	ipChar := func(c byte) bool { return isHex(c) || c == ':' || c == '.' }
	done := 0 // runs end before here were judged
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '.' && c != ':' || i < done {
			continue
		}
		if !isHex(at(text, i+1)) && at(text, i+1) != ':' && !isHex(before(text, i)) {
			continue
		}
		s := i
		for s > 0 && ipChar(text[s-1]) {
			s--
		}
		for s < i && (text[s] == '.' || text[s] == ':' && at(text, s+1) != ':') {
			s++
		}
		e := i
		for e < len(text) && ipChar(text[e]) {
			e++
		}
		done = e
		for e > s && (text[e-1] == '.' || text[e-1] == ':' && (e-2 < s || text[e-2] != ':')) {
			e--
		}
		if p := before(text, s); wordChar(p) || wordChar(at(text, e)) || e <= s {
			continue
		}
		cand := text[s:e]
		if ipCandidate(cand) {
			if bytes.Count(cand, []byte(":")) == 1 {
				e = s + bytes.IndexByte(cand, ':')
			}
			dst = append(dst, Finding{TypeIP, s, e})
		}
	}
	return dst
}

// findAPIKeys: a known prefix at a word start, then token characters, at
// least the prefix's minimum, with a digit among them (prose such as
// "sk-learn-style-…" has none).
func refFindAPIKeys(text []byte, dst []Finding) []Finding {
	for i := 0; i < len(text); i++ {
		cands := apiKeyByFirst[text[i]]
		if len(cands) == 0 || tokenChar(before(text, i)) {
			continue
		}
		for _, kp := range cands {
			if len(text)-i < len(kp.prefix) || string(text[i:i+len(kp.prefix)]) != kp.prefix {
				continue
			}
			e, digits := i+len(kp.prefix), 0
			for e < len(text) && tokenChar(text[e]) {
				if isDigit(text[e]) {
					digits++
				}
				e++
			}
			if e-i-len(kp.prefix) >= kp.min && digits > 0 {
				dst = append(dst, Finding{TypeAPIKey, i, e})
				i = e - 1
			}
			break
		}
	}
	return dst
}

// findAWSKeys: an access key id, a prefix and 16 upper-case letters or
// digits; and a secret access key (40 base64 characters) written after
// aws_secret_access_key or a similar label.
func refFindAWSKeys(text []byte, dst []Finding) []Finding {
	for i := 0; i+20 <= len(text); i++ {
		if text[i] != 'A' || isAlnum(before(text, i)) {
			continue
		}
		for _, p := range awsPrefixes {
			if !bytes.HasPrefix(text[i:], p) {
				continue
			}
			if allFunc(text[i+4:i+20], func(c byte) bool { return isUpper(c) || isDigit(c) }) && !isAlnum(at(text, i+20)) {
				dst = append(dst, Finding{TypeAWSKey, i, i + 20})
				i += 19
			}
			break
		}
	}
	lower := asciiLower(text) // bytes.ToLower before, whose Unicode folding could move offsets
	for _, label := range [][]byte{[]byte("secret_access_key"), []byte("secretaccesskey")} {
		from := 0
		for {
			k := bytes.Index(lower[from:], label)
			if k < 0 {
				break
			}
			j := from + k + len(label)
			from = j
			for skip := 0; j < len(text) && skip < 8 && bytes.IndexByte([]byte(" \t\"':="), text[j]) >= 0; skip++ {
				j++
			}
			e := j
			for e < len(text) && b64Char(text[e]) {
				e++
			}
			if e-j == 40 {
				dst = append(dst, Finding{TypeAWSKey, j, e})
				from = e
			}
		}
	}
	return dst
}

func refFindHighEntropy(text []byte, dst []Finding) []Finding {
	for i := 0; i < len(text); i++ {
		if !tokenChar(text[i]) && text[i] != '+' && text[i] != '/' {
			continue
		}
		e := i
		for e < len(text) && (b64Char(text[e]) || text[e] == '_' || text[e] == '-') {
			e++
		}
		tok := text[i:e]
		for e < len(text) && text[e] == '=' && e-i < entropyMaxLen {
			e++
		}
		if n := len(tok); n >= entropyMinLen && n <= entropyMaxLen && !hasIDPrefix(tok) && randomLooking(tok) {
			dst = append(dst, Finding{TypeHighEntropy, i, e})
		}
		i = e
	}
	return dst
}

// mask writes into dst (len(src)) the text the checks match: src itself when
// it is plain text; for a JSON document, its string values with everything
// else — structure, numbers, object keys — and every escape sequence
// replaced by spaces. Offsets in dst are offsets in src, so a match is
// replaced in src directly, and a placeholder (plain ASCII) never splits an
// escape. Strings are scanned as they appear; an invalid document is masked
// as far as it goes.
func refMask(dst, src []byte, isJSON bool) []byte {
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

// findJWTs: three base64url parts separated by dots, the first two JSON
// objects (they start with "eyJ", base64 of `{"`).
func refFindJWTs(text []byte, dst []Finding) []Finding {
	from := 0
	for {
		i := bytes.Index(text[from:], []byte("eyJ"))
		if i < 0 {
			return dst
		}
		i += from
		from = i + 3
		if tokenChar(before(text, i)) {
			continue
		}
		e, parts, n := i, 0, 0
		for e < len(text) {
			c := text[e]
			if tokenChar(c) {
				n++
			} else if c == '.' && n >= 10 && parts < 2 {
				parts++
				n = 0
			} else {
				break
			}
			e++
		}
		if parts == 2 && n >= 10 && bytes.HasPrefix(text[bytes.IndexByte(text[i:e], '.')+i+1:], []byte("eyJ")) {
			dst = append(dst, Finding{TypeJWT, i, e})
			from = e
		}
	}
}

// digitRun reads, from i, digits in groups separated by one of seps (one
// separator between groups). It returns the end of the last digit and the
// group lengths; groups is reused.
func refDigitRun(text []byte, i int, seps string, groups []int) (int, []int) {
	groups = groups[:0]
	end := i
	for i < len(text) {
		n := 0
		for i+n < len(text) && isDigit(text[i+n]) {
			n++
		}
		if n == 0 {
			break
		}
		groups = append(groups, n)
		i += n
		end = i
		if i+1 < len(text) && strings.IndexByte(seps, text[i]) >= 0 && isDigit(text[i+1]) {
			i++
			continue
		}
		break
	}
	return end, groups
}

// nanpParen: (555) 123-4567.
func refNanpParen(text []byte, i int) (int, bool) {
	if len(text) < i+14 || !allFunc(text[i+1:i+4], isDigit) || text[i+4] != ')' {
		return i, false
	}
	j := i + 5
	if text[j] == ' ' {
		j++
	}
	var groups [4]int
	e, g := refDigitRun(text, j, "-.", groups[:0])
	if len(g) != 2 || g[0] != 3 || g[1] != 4 || !endsNumber(text, e) || text[i+1] == '0' || text[i+1] == '1' {
		return i, false
	}
	return e, true
}

// nanpPlain: 555-123-4567, 555.123.4567, 555 123 4567 (one separator used
// throughout), optionally after "1-". Not one, it returns the end of the
// longest run of digit groups read.
func refNanpPlain(text []byte, i int) (int, bool) {
	var groups [5]int
	longest := i
	for _, sep := range []string{"-", ".", " "} {
		e, g := refDigitRun(text, i, sep, groups[:0])
		longest = max(longest, e)
		if !endsNumber(text, e) {
			continue
		}
		first := i
		if len(g) == 4 && g[0] == 1 && text[i] == '1' {
			g, first = g[1:], i+2
		}
		if len(g) == 3 && g[0] == 3 && g[1] == 3 && g[2] == 4 && text[first] >= '2' && text[first+4] >= '2' {
			return e, true
		}
	}
	return longest, false
}
