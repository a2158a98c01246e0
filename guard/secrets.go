package guard

import (
	"bytes"
	"math"
)

// Types of the secrets kind.
const (
	TypeAPIKey      = "API_KEY"
	TypeAWSKey      = "AWS_KEY"
	TypePrivateKey  = "PRIVATE_KEY"
	TypeJWT         = "JWT"
	TypeHighEntropy = "SECRET"
)

var secretDetectors = []detector{
	{TypeAPIKey, findAPIKeys, false},
	{TypeAWSKey, findAWSKeys, false},
	{TypePrivateKey, findPrivateKeys, false},
	{TypeJWT, findJWTs, false},
	{TypeHighEntropy, findHighEntropy, false},
}

// tokenChar: the characters of API keys and base64url.
func tokenChar(c byte) bool { return isAlnum(c) || c == '_' || c == '-' }

// keyPrefix is a provider's API key: its fixed prefix and the least number of
// token characters after it.
type keyPrefix struct {
	prefix string
	min    int
}

// apiKeyPrefixes: OpenAI (sk-…, sk-proj-…, sk-svcacct-…), Anthropic
// (sk-ant-api03-…), Google (AIza + 35), GitHub (ghp_, gho_, ghu_, ghs_,
// ghr_, github_pat_), Slack (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-), Stripe
// (sk_live_, rk_live_, sk_test_), Hugging Face (hf_), GitLab (glpat-), Groq
// (gsk_), xAI (xai-), and Tollgate's own virtual keys (tg-).
var apiKeyPrefixes = []keyPrefix{
	{"sk-", 20},
	{"AIza", 35},
	{"ghp_", 36},
	{"gho_", 36},
	{"ghu_", 36},
	{"ghs_", 36},
	{"ghr_", 36},
	{"github_pat_", 40},
	{"xoxb-", 20},
	{"xoxp-", 20},
	{"xoxa-", 20},
	{"xoxr-", 20},
	{"xoxs-", 20},
	{"sk_live_", 20},
	{"rk_live_", 20},
	{"sk_test_", 20},
	{"hf_", 30},
	{"glpat-", 20},
	{"gsk_", 40},
	{"xai-", 40},
	{"tg-", 24},
}

// apiKeyByFirst indexes apiKeyPrefixes by their first byte.
var apiKeyByFirst = func() (t [256][]keyPrefix) {
	for _, kp := range apiKeyPrefixes {
		t[kp.prefix[0]] = append(t[kp.prefix[0]], kp)
	}
	return t
}()

// findAPIKeys: a known prefix at a word start, then token characters, at
// least the prefix's minimum, with a digit among them (prose such as
// "sk-learn-style-…" has none).
func findAPIKeys(text []byte, ax *anchors, dst []Finding) []Finding {
	// Every prefix but AIza has a '-' or '_' at most 6 bytes in: the
	// candidate starts are the bytes up to 6 before each separator, and each
	// "AIza"; other bytes cannot start a key.
	for i := 0; i < len(text); i++ {
		if i = ax.nextKeyStart(text, i); i == len(text) {
			return dst
		}
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

// keySepMax: the farthest a prefix's first '-' or '_' is from its start
// (github_pat_).
const keySepMax = 6

// awsPrefixes: the unique-ID prefixes of AWS access keys (IAM user, STS
// temporary credentials and other principals' keys).
var awsPrefixes = [][]byte{
	[]byte("AKIA"), []byte("ASIA"), []byte("ABIA"), []byte("ACCA"), []byte("AGPA"), []byte("AIDA"),
	[]byte("AROA"), []byte("ANPA"), []byte("ANVA"), []byte("AIPA"), []byte("APKA"),
}

// findAWSKeys: an access key id, a prefix and 16 upper-case letters or
// digits; and a secret access key (40 base64 characters) written after
// aws_secret_access_key or a similar label.
func findAWSKeys(text []byte, _ *anchors, dst []Finding) []Finding {
	for i := 0; i+20 <= len(text); i++ {
		k := bytes.IndexByte(text[i:len(text)-19], 'A')
		if k < 0 {
			break
		}
		if i += k; isAlnum(before(text, i)) {
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
	for _, label := range [][]byte{[]byte("secret_access_key"), []byte("secretaccesskey")} {
		var ys foldIndex
		from := 0
		for {
			k := ys.find(text, from, label)
			if k < 0 {
				break
			}
			j := k + len(label)
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

// foldIndex finds a lower-case ASCII label in text, ASCII case-insensitively,
// anchored on its last byte in either case (bytes.IndexByte), remembering
// where the next of each is so a search from a later offset does not scan
// again.
type foldIndex struct {
	lo, up int // next position of the last byte in lower and upper case, -1 before the first search
	init   bool
}

func (x *foldIndex) find(text []byte, from int, label []byte) int {
	last := label[len(label)-1]
	next := func(c byte, cur, at int) int {
		if cur >= at || cur == len(text) {
			return cur
		}
		if k := bytes.IndexByte(text[at:], c); k >= 0 {
			return at + k
		}
		return len(text)
	}
	if !x.init {
		x.lo, x.up, x.init = -1, -1, true
	}
	for at := from + len(label) - 1; at < len(text); {
		x.lo = next(last, x.lo, at)
		x.up = next(last-'a'+'A', x.up, at)
		p := min(x.lo, x.up)
		if p == len(text) {
			return -1
		}
		if s := p - len(label) + 1; bytes.EqualFold(text[s:p+1], label) {
			return s
		}
		at = p + 1
	}
	return -1
}

func b64Char(c byte) bool { return isAlnum(c) || c == '+' || c == '/' }

// findPrivateKeys: a PEM block whose label ends in PRIVATE KEY (RSA, EC,
// OPENSSH, ENCRYPTED, PKCS#8), from its BEGIN line to its END line, or to the
// end of the text when the END line has not come (yet).
func findPrivateKeys(text []byte, _ *anchors, dst []Finding) []Finding {
	from := 0
	for {
		i := bytes.Index(text[from:], []byte("-----BEGIN "))
		if i < 0 {
			return dst
		}
		i += from
		from = i + 11
		eol := bytes.Index(text[from:], []byte("-----"))
		if eol < 0 || eol > 40 || !bytes.HasSuffix(text[from:from+eol], []byte("PRIVATE KEY")) {
			continue
		}
		label := text[from : from+eol]
		end := bytes.Index(text[from+eol:], append(append([]byte("-----END "), label...), "-----"...))
		e := len(text)
		if end >= 0 {
			e = from + eol + end + len("-----END ") + len(label) + 5
		}
		dst = append(dst, Finding{TypePrivateKey, i, e})
		from = e
	}
}

// findJWTs: three base64url parts separated by dots, the first two JSON
// objects (they start with "eyJ", base64 of `{"`).
func findJWTs(text []byte, _ *anchors, dst []Finding) []Finding {
	from := 0
	for {
		i := indexEyJ(text, from)
		if i < 0 {
			return dst
		}
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

// indexEyJ is bytes.Index(text[from:], "eyJ")+from, anchored on the 'J',
// rarer in prose than the 'e'.
func indexEyJ(text []byte, from int) int {
	for j := from + 2; j < len(text); j++ {
		k := bytes.IndexByte(text[j:], 'J')
		if k < 0 {
			return -1
		}
		if j += k; text[j-2] == 'e' && text[j-1] == 'y' {
			return j - 2
		}
	}
	return -1
}

// High-entropy tokens: a run of base64/base64url characters (with its
// padding) between 32 and 256 long — longer runs are data, such as an inlined
// image — with upper and lower case in balance, as random text has them and
// words in CamelCase do not, and whose Shannon entropy per character is at least entropyMin bits.
// Hex digests and UUIDs (16 symbols, one case) are not tokens here, nor are
// the ids providers give replies (chatcmpl-…, msg_…).
const (
	entropyMinLen  = 32
	entropyMaxLen  = 256
	entropyMin     = 4.0
	entropyCaseMin = 0.3
)

var idPrefixes = [][]byte{
	[]byte("chatcmpl-"), []byte("cmpl-"), []byte("msg_"), []byte("resp_"), []byte("call_"), []byte("toolu_"),
	[]byte("req_"), []byte("run_"), []byte("file-"), []byte("batch_"), []byte("fc_"), []byte("rs_"), []byte("asst_"),
}

func findHighEntropy(text []byte, _ *anchors, dst []Finding) []Finding {
	for i := 0; i < len(text); i++ {
		// A token starting at i or up to the next non-token byte before
		// i+31 is shorter than entropyMinLen: skip to after that byte,
		// unless it is '=' (padding of a run before it may reach past it).
		if p := i + entropyMinLen - 1; p < len(text) {
			s := p
			for s >= i && runChar[text[s]] {
				s--
			}
			if s >= i && text[s] != '=' {
				i = s
				continue
			}
		}
		if !runChar[text[i]] {
			continue
		}
		e := i
		for e < len(text) && runChar[text[e]] {
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

// runChar: the characters of a high-entropy token (base64 and base64url).
var runChar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = b64Char(byte(c)) || c == '_' || c == '-'
	}
	return t
}()

func hasIDPrefix(b []byte) bool {
	for _, p := range idPrefixes {
		if bytes.HasPrefix(b, p) {
			return true
		}
	}
	return false
}

// randomLooking: both cases in balance (random letters are about half upper
// case, words in CamelCase a fifth), and high entropy.
func randomLooking(b []byte) bool {
	up, lo := 0, 0
	for _, c := range b {
		switch {
		case isUpper(c):
			up++
		case isLower(c):
			lo++
		}
	}
	f := float64(up) / float64(max(up+lo, 1))
	if f < entropyCaseMin || f > 1-entropyCaseMin {
		return false
	}
	return entropy(b) >= entropyMin
}

func entropy(b []byte) float64 {
	var counts [256]int
	for _, c := range b {
		counts[c]++
	}
	h, n := 0.0, float64(len(b))
	for _, k := range counts {
		if k > 0 {
			p := float64(k) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}
