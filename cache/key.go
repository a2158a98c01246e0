package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ignoredFields are the top-level request fields of each API that do not
// change the answer, left out of the key: whether it streams (a hit is
// rendered either way), who the end user is, labels and metadata, whether
// the provider stores the reply, its service tier and its own prompt-cache
// hints.
var ignoredFields = map[API][]string{
	APIChat: {
		"stream", "stream_options", "user", "metadata", "store", "service_tier",
		"safety_identifier", "prompt_cache_key", "prompt_cache_retention",
	},
	APICompletions: {"stream", "stream_options", "user"},
	APIEmbeddings:  {"user"},
	APIResponses: {
		"stream", "stream_options", "user", "metadata", "store", "service_tier",
		"safety_identifier", "prompt_cache_key", "prompt_cache_retention", "background",
	},
	APIMessages:       {"stream", "metadata", "service_tier"},
	APIGeminiGenerate: {"labels"},
}

// promptFields are the fields holding the prompt: the semantic cache embeds
// their text (system prompt first) and keys its namespace on everything else.
var promptFields = map[API][]string{
	APIChat:           {"messages"},
	APICompletions:    {"prompt"},
	APIResponses:      {"instructions", "input"},
	APIMessages:       {"system", "messages"},
	APIGeminiGenerate: {"systemInstruction", "system_instruction", "contents"},
}

// parseBody decodes a JSON object keeping numbers as written.
func parseBody(body []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, ErrBadBody
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) { // trailing data after the object
		return nil, ErrBadBody
	}
	return m, nil
}

// canonical is v in canonical JSON: object keys sorted, no whitespace,
// strings escaped one way, numbers in one spelling (canonicalNumber).
func canonical(v any) []byte {
	var b bytes.Buffer
	writeCanonical(&b, v)
	return b.Bytes()
}

func writeCanonical(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case string:
		writeString(b, x)
	case json.Number:
		b.WriteString(canonicalNumber(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	default: // nil
		b.WriteString("null")
	}
}

func writeString(b *bytes.Buffer, s string) {
	e, _ := json.Marshal(s) // a string always encodes
	b.Write(e)
}

// canonicalNumber is one spelling of a JSON number: an integer literal stays
// as it is (seeds exceed float64's exact range), anything else becomes the
// shortest float64 form, an integral one as an integer (0.50, 5e-1 and 0.5
// are one key; so are 0, 0.0 and 0e0).
func canonicalNumber(n json.Number) string {
	return string(appendCanonicalNumber(nil, []byte(n)))
}

// appendCanonicalNumber appends canonicalNumber's spelling of the valid
// number lit.
func appendCanonicalNumber(dst, lit []byte) []byte {
	if !bytes.ContainsAny(lit, ".eE") {
		if string(lit) == "-0" {
			return append(dst, '0')
		}
		return append(dst, lit...)
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return append(dst, lit...)
	}
	if f == float64(int64(f)) && f < 1e15 && f > -1e15 {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// scopeID names the scope an entry is shared in; it always starts with the
// organization, so that no level shares across organizations.
func scopeID(t Tenant, l Level) string {
	switch {
	case l == LevelOrg && t.Org != "":
		return "org:" + t.Org
	case l == LevelTeam && t.Team != "":
		return "team:" + t.Org + "/" + t.Team
	default:
		return "key:" + t.Org + "/" + t.Key
	}
}

// digest is the hex SHA-256 of the parts, each length-prefixed so that no
// two lists of parts share a digest.
func digest(parts ...[]byte) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := len(p)
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keyVersion changes whenever the key's derivation or the entry's form does,
// so that entries of an older gateway are never read.
const keyVersion = "tgc1"

// Key is an entry's key: the SHA-256 of what the request's answer depends on
// (exactKey's parts). Backends that need text use its hex form (String).
type Key [sha256.Size]byte

// String is the key in hexadecimal.
func (k Key) String() string { return hex.EncodeToString(k[:]) }

// ParseKey reads String's form back (an Index keeps keys as text).
func ParseKey(s string) (Key, bool) {
	var k Key
	if len(s) != 2*len(k) {
		return k, false
	}
	_, err := hex.Decode(k[:], []byte(s))
	return k, err == nil
}

// exactKey is the cache key of a request whose body is canon (canonical,
// ignored fields already left out): digest's hash of the key version, the
// API, the model group, the scope, Vary and canon. It is what
// canonicalizer.key computes without building strings (the miss path).
func exactKey(req *Request, scope string, canon []byte) Key {
	k, _ := ParseKey(digest([]byte(keyVersion), []byte(req.API), []byte(req.Model), []byte(scope), []byte(req.Vary), canon))
	return k
}

// appendPart appends s as one part of digest: its length (8 bytes, little
// endian), then its bytes.
func appendPart(b []byte, s string) []byte {
	return append(binary.LittleEndian.AppendUint64(b, uint64(len(s))), s...)
}

// appendScope appends scopeID(t, l) as one part of digest, without building
// the string.
func appendScope(b []byte, t Tenant, l Level) []byte {
	var parts [4]string
	switch {
	case l == LevelOrg && t.Org != "":
		parts = [4]string{"org:", t.Org}
	case l == LevelTeam && t.Team != "":
		parts = [4]string{"team:", t.Org, "/", t.Team}
	default:
		parts = [4]string{"key:", t.Org, "/", t.Key}
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(n))
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// semanticParts splits a body into the namespace of its semantic entries
// (every field but the prompt, with the scope) and the prompt's text.
func semanticParts(req *Request, scope string, body map[string]any) (ns, prompt string, ok bool) {
	fields := promptFields[req.API]
	if len(fields) == 0 {
		return "", "", false
	}
	rest := make(map[string]any, len(body))
	var sb strings.Builder
	for k, v := range body {
		rest[k] = v
	}
	for _, f := range fields {
		if v, ok := rest[f]; ok {
			writePrompt(&sb, v)
			delete(rest, f)
		}
	}
	if sb.Len() == 0 {
		return "", "", false
	}
	ns = digest([]byte(keyVersion+"/semantic"), []byte(req.API), []byte(req.Model), []byte(scope), []byte(req.Vary), canonical(rest))
	return ns, sb.String(), true
}

// promptSkip are keys whose strings are not prompt text (ids, types, media).
var promptSkip = map[string]bool{
	"type": true, "id": true, "cache_control": true, "signature": true, "tool_call_id": true,
	"call_id": true, "mime_type": true, "mimeType": true, "data": true, "image_url": true,
	"url": true, "file_id": true, "detail": true,
}

// writePrompt appends the text of a prompt value: its strings in order, a
// message's role before its content.
func writePrompt(sb *strings.Builder, v any) {
	switch x := v.(type) {
	case string:
		if sb.Len() > 0 {
			sb.WriteByte('\n')
		}
		sb.WriteString(x)
	case []any:
		for _, e := range x {
			writePrompt(sb, e)
		}
	case map[string]any:
		if r, ok := x["role"].(string); ok {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(r + ":")
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if k != "role" && !promptSkip[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			writePrompt(sb, x[k])
		}
	}
}
