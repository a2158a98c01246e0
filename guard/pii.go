package guard

import (
	"bytes"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// detector finds the matches of one type; digits: it skips to the digits
// and colons of the text (anchors.index).
type detector struct {
	typ    string
	find   func(text []byte, ax *anchors, dst []Finding) []Finding
	digits bool
}

// Types of the pii kind.
const (
	TypeEmail      = "EMAIL"
	TypePhone      = "PHONE"
	TypeCreditCard = "CREDIT_CARD"
	TypeIBAN       = "IBAN"
	TypeSSN        = "SSN"
	TypeIP         = "IP_ADDRESS"
)

var piiDetectors = []detector{
	{TypeEmail, findEmails, false},
	{TypeCreditCard, findCards, true},
	{TypeIBAN, findIBANs, true},
	{TypeSSN, findSSNs, true},
	{TypePhone, findPhones, true},
	{TypeIP, findIPs, true},
}

// typedFinder runs some detectors.
type typedFinder []detector

func newTypedFinder(all []detector, only []string) (typedFinder, error) {
	if len(only) == 0 {
		return typedFinder(all), nil
	}
	var out typedFinder
	for _, t := range only {
		i := slices.IndexFunc(all, func(d detector) bool { return strings.EqualFold(d.typ, t) })
		if i < 0 {
			names := make([]string, len(all))
			for j, d := range all {
				names[j] = d.typ
			}
			return nil, fmt.Errorf("%w: unknown type %q (%s)", ErrInvalid, t, strings.Join(names, ", "))
		}
		out = append(out, all[i])
	}
	return out, nil
}

// find runs the detectors on text; the digits and colons are indexed once,
// for the first detector that skips to them (none of the secrets' does).
func (f typedFinder) find(text []byte, dst []Finding) []Finding {
	ax := anchorPool.Get().(*anchors)
	ax.reset(text)
	indexed := false
	for _, d := range f {
		if d.digits && !indexed {
			ax.index(text)
			indexed = true
		}
		dst = d.find(text, ax, dst)
	}
	anchorPool.Put(ax)
	return dst
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlpha(c byte) bool { return isUpper(c) || isLower(c) }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// wordChar: a character that continues a word or number (a match must not
// be glued to one).
func wordChar(c byte) bool { return isAlnum(c) || c == '_' }

func before(text []byte, i int) byte {
	if i <= 0 {
		return ' '
	}
	return text[i-1]
}

func at(text []byte, i int) byte {
	if i >= len(text) {
		return ' '
	}
	return text[i]
}

// --- e-mail -------------------------------------------------------------------

func emailLocal(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func emailDomain(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

// findEmails: local@domain.tld, the TLD two letters or more.
func findEmails(text []byte, ax *anchors, dst []Finding) []Finding {
	from := 0
	for {
		i := bytes.IndexByte(text[from:], '@')
		if i < 0 {
			return dst
		}
		i += from
		from = i + 1
		s := i
		for s > 0 && emailLocal(text[s-1]) {
			s--
		}
		for s < i && text[s] == '.' {
			s++
		}
		if s == i || text[i-1] == '.' {
			continue
		}
		e := i + 1
		for e < len(text) && emailDomain(text[e]) {
			e++
		}
		for e > i+1 && (text[e-1] == '.' || text[e-1] == '-') {
			e--
		}
		dom := text[i+1 : e]
		dot := bytes.LastIndexByte(dom, '.')
		if dot <= 0 || len(dom)-dot-1 < 2 || bytes.Contains(dom, []byte("..")) {
			continue
		}
		tld := dom[dot+1:]
		if !allFunc(tld, isAlpha) {
			continue
		}
		dst = append(dst, Finding{TypeEmail, s, e})
		from = e
	}
}

func allFunc(b []byte, f func(byte) bool) bool {
	for _, c := range b {
		if !f(c) {
			return false
		}
	}
	return true
}

// --- digit groups -------------------------------------------------------------

// digitRun reads, from i, digits in groups separated by one of seps (one
// separator between groups). It returns the end of the last digit and the
// group lengths; groups is reused.
func digitRun(text []byte, i int, sep1, sep2 byte, groups []int) (int, []int) {
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
		if i+1 < len(text) && (text[i] == sep1 || text[i] == sep2) && isDigit(text[i+1]) {
			i++
			continue
		}
		break
	}
	return end, groups
}

// digitStarts calls f at each digit that starts a number (not preceded by a
// word character, a dot or a digit group separator glued to a digit).
func digitStarts(text []byte, ax *anchors, f func(i int) int) {
	for i := 0; i < len(text); i++ {
		if i = ax.nextDigit(i); i == len(text) {
			return
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

// endsNumber reports whether a number ending at e is not glued to more.
func endsNumber(text []byte, e int) bool {
	c := at(text, e)
	if wordChar(c) {
		return false
	}
	if (c == '.' || c == '-' || c == ',') && isDigit(at(text, e+1)) {
		return false
	}
	return true
}

// --- credit cards ---------------------------------------------------------------

func luhn(d []byte) bool {
	sum, dbl := 0, false
	for i := len(d) - 1; i >= 0; i-- {
		n := int(d[i] - '0')
		if dbl {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
		dbl = !dbl
	}
	return sum%10 == 0
}

// cardPrefix: the issuer ranges of the major networks.
func cardPrefix(d []byte) bool {
	p2 := int(d[0]-'0')*10 + int(d[1]-'0')
	p4 := p2*100 + int(d[2]-'0')*10 + int(d[3]-'0')
	switch {
	case d[0] == '4': // Visa
		return len(d) == 13 || len(d) == 16 || len(d) == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		return len(d) == 16
	case p2 == 34 || p2 == 37: // American Express
		return len(d) == 15
	case p4 == 6011 || p2 == 65 || p4 >= 6440 && p4 <= 6499: // Discover
		return len(d) >= 16
	case p2 == 35: // JCB
		return len(d) >= 16
	case p2 == 36 || p2 == 38 || p2 == 30: // Diners Club
		return len(d) >= 14
	case p2 == 62: // UnionPay
		return len(d) >= 16
	}
	return false
}

// findCards: 13–19 digits, alone or in groups separated by single spaces or
// dashes, of a known issuer and passing the Luhn check.
func findCards(text []byte, ax *anchors, dst []Finding) []Finding {
	var groups [8]int
	var digits [24]byte
	digitStarts(text, ax, func(i int) int {
		e, g := digitRun(text, i, ' ', '-', groups[:0])
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

// --- US SSN ---------------------------------------------------------------------

// findSSNs: AAA-GG-SSSS with the Social Security Administration's rules:
// area not 000, 666 or 9xx, group not 00, serial not 0000.
func findSSNs(text []byte, ax *anchors, dst []Finding) []Finding {
	var groups [4]int
	digitStarts(text, ax, func(i int) int {
		e, g := digitRun(text, i, '-', '-', groups[:0])
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

// --- phone numbers --------------------------------------------------------------

// findPhones: international numbers written with their "+" and country code
// (8 to 15 digits, E.164), and North American numbers in their written forms
// (555-123-4567, 555.123.4567, (555) 123-4567, 1-555-123-4567). A bare run of
// digits is not a phone number here: too many identifiers look like one.
func findPhones(text []byte, ax *anchors, dst []Finding) []Finding {
	for i := 0; i < len(text); i++ {
		// Every start has a digit at it or after it ('+', '(').
		d := ax.nextDigit(i)
		if d == len(text) {
			return dst
		}
		if d > i {
			i = d
			if p := text[d-1]; p == '+' || p == '(' {
				i = d - 1
			}
		}
		c := text[i]
		var e int
		var ok bool
		switch {
		case c == '+' && isDigit(at(text, i+1)) && !wordChar(before(text, i)):
			e, ok = intlPhone(text, i)
		case c == '(' && isDigit(at(text, i+1)) && !wordChar(before(text, i)):
			e, ok = nanpParen(text, i)
		case isDigit(c) && !wordChar(before(text, i)) && before(text, i) != '.' && before(text, i) != '-' && before(text, i) != '+':
			e, ok = nanpPlain(text, i)
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

// intlPhone reads "+CC …" from the '+' at i: digits with single spaces,
// dashes, dots or a parenthesized group between them.
func intlPhone(text []byte, i int) (int, bool) {
	j, digits, end := i+1, 0, i+1
	for j < len(text) {
		c := text[j]
		switch {
		case isDigit(c):
			digits++
			j++
			end = j
		case (c == ' ' || c == '-' || c == '.') && j > i+1 && isDigit(at(text, j-1)) && (isDigit(at(text, j+1)) || at(text, j+1) == '('):
			j++
		case c == '(' && isDigit(at(text, j+1)):
			k := j + 1
			for k < len(text) && isDigit(text[k]) {
				k++
			}
			if at(text, k) != ')' || k-j-1 > 4 {
				return end, false
			}
			digits += k - j - 1
			j = k + 1
			end = j
			if at(text, j) == ' ' || at(text, j) == '-' {
				j++
			}
		default:
			goto done
		}
	}
done:
	return end, digits >= 8 && digits <= 15 && endsNumber(text, end)
}

// nanpParen: (555) 123-4567.
func nanpParen(text []byte, i int) (int, bool) {
	if len(text) < i+14 || !allFunc(text[i+1:i+4], isDigit) || text[i+4] != ')' {
		return i, false
	}
	j := i + 5
	if text[j] == ' ' {
		j++
	}
	var groups [4]int
	e, g := digitRun(text, j, '-', '.', groups[:0])
	if len(g) != 2 || g[0] != 3 || g[1] != 4 || !endsNumber(text, e) || text[i+1] == '0' || text[i+1] == '1' {
		return i, false
	}
	return e, true
}

// nanpPlain: 555-123-4567, 555.123.4567, 555 123 4567 (one separator used
// throughout), optionally after "1-". Not one, it returns the end of the
// longest run of digit groups read.
func nanpPlain(text []byte, i int) (int, bool) {
	// Only the separator after the first group can continue the run: with
	// the other two the run is that group alone, not a number.
	n := i
	for n < len(text) && isDigit(text[n]) {
		n++
	}
	sep := at(text, n)
	if sep != '-' && sep != '.' && sep != ' ' || !isDigit(at(text, n+1)) {
		return n, false
	}
	var groups [5]int
	e, g := digitRun(text, i, sep, sep, groups[:0])
	if !endsNumber(text, e) {
		return e, false
	}
	first := i
	if len(g) == 4 && g[0] == 1 && text[i] == '1' {
		g, first = g[1:], i+2
	}
	return e, len(g) == 3 && g[0] == 3 && g[1] == 3 && g[2] == 4 && text[first] >= '2' && text[first+4] >= '2'
}

// --- IBAN -----------------------------------------------------------------------

// ibanLengths: the length of the IBAN of each country that has one (ISO 13616
// registry).
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29,
	"BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29,
	"ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28,
	"HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
	"LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19,
	"MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29,
	"RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28,
	"TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// findIBANs: a country code, two check digits and the account (upper-case
// letters and digits, in groups of four separated by single spaces or
// written together), of the country's length and passing ISO 7064 mod 97-10.
func findIBANs(text []byte, ax *anchors, dst []Finding) []Finding {
	var buf [40]byte
	for i := 0; i+15 <= len(text); i++ {
		// The check digits are the anchor: skip to the next digit at i+2.
		if i = ax.nextDigit(i+2) - 2; i+15 > len(text) {
			break
		}
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

// mod97 is ISO 7064 MOD 97-10 over the IBAN rearranged (first four
// characters moved to the end, letters as 10–35).
func mod97(b []byte) bool {
	r := 0
	add := func(c byte) {
		if isDigit(c) {
			r = (r*10 + int(c-'0')) % 97
		} else {
			r = (r*100 + int(c-'A') + 10) % 97
		}
	}
	for _, c := range b[4:] {
		add(c)
	}
	for _, c := range b[:4] {
		add(c)
	}
	return r == 1
}

// --- IP addresses ---------------------------------------------------------------

// findIPs: dotted-quad IPv4 (each part 0–255, no leading zeros, not part of a
// longer dotted number such as a version) and IPv6 (at least two colons, as
// net/netip parses it; a time such as 12:30:45 does not).
func findIPs(text []byte, ax *anchors, dst []Finding) []Finding {
	// Anchored on the digits and colons (every IPv4 address has digits,
	// every IPv6 address colons), each expanded to its run of address
	// characters, judged once; a run without '.' or ':' is not one.
	ipChar := func(c byte) bool { return isHex(c) || c == ':' || c == '.' }
	for i := 0; ; {
		p := ax.nextDigitOrColon(i)
		if p == len(text) {
			return dst
		}
		s := p
		for s > 0 && ipChar(text[s-1]) {
			s--
		}
		e := p
		for e < len(text) && ipChar(text[e]) {
			e++
		}
		i = e
		// Trimmed as far as its first separator with an address character
		// beside it.
		q := s
		for q < e && !ipSeparator(text, q) {
			q++
		}
		if q == e {
			continue
		}
		for s < q && (text[s] == '.' || text[s] == ':' && at(text, s+1) != ':') {
			s++
		}
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
}

// ipSeparator: a '.' or ':' at i with a hex digit or ':' after it or a hex
// digit before it.
func ipSeparator(text []byte, i int) bool {
	c := text[i]
	return (c == '.' || c == ':') && (isHex(at(text, i+1)) || at(text, i+1) == ':' || isHex(before(text, i)))
}

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func ipCandidate(b []byte) bool {
	colons := bytes.Count(b, []byte(":"))
	dots := bytes.Count(b, []byte("."))
	if colons == 1 && dots == 3 { // host:port
		b, colons = b[:bytes.IndexByte(b, ':')], 0
	}
	switch {
	case colons == 0 && dots == 3:
		a, err := netip.ParseAddr(string(b))
		return err == nil && a.Is4()
	case colons >= 2:
		if len(b) < 3 || !bytes.ContainsFunc(b, func(r rune) bool { return r != ':' }) {
			return false
		}
		a, err := netip.ParseAddr(string(b))
		return err == nil && a.Is6() && !a.IsUnspecified()
	}
	return false
}
