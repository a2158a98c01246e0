package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"slices"
	"sync"
	"unicode/utf8"
)

// The key's canonical JSON, written in one pass over the body without
// decoding it into Go values (the cost of a cached group's miss, measured
// by BenchmarkHandleCacheMiss in extproc): object members sorted by their
// decoded names, no whitespace, strings escaped one way (only '"', '\\' and
// control characters; a string without a backslash is copied as it is),
// numbers in canonicalNumber's spelling. At the top level the API's
// ignoredFields are left out, and what the policy needs is noted.

// bodyFacts are what the policy reads of a body.
type bodyFacts struct {
	temperature  []byte // the top-level temperature's literal (nil: none)
	genConfig    []byte // Gemini: generationConfig, canonical
	streamOpts   []byte // stream_options, canonical
	includeUsage bool
}

// canonicalizer writes one body's canonical form and hashes it into the
// key. It is pooled (canonPool) with its buffers, so that a miss builds its
// key without allocating: take one with canonicalize, read out, key and
// facts, then release it.
type canonicalizer struct {
	src     []byte
	i       int
	out     []byte
	tmp     []byte   // reordering scratch
	members []member // the members of the objects being written, innermost last
	skip    []string
	// fb holds the facts' bytes, temp/gen/so where each is in it.
	fb            []byte
	temp, gen, so span
	h             hash.Hash // SHA-256
	hdr           []byte    // the key's parts before the body
	sum           [sha256.Size]byte
}

// span is a range of canonicalizer.fb; ok false when absent.
type span struct {
	start, end int
	ok         bool
}

type member struct {
	name       []byte // decoded
	start, end int    // the member ("name":value) in out
}

var canonPool = sync.Pool{New: func() any { return &canonicalizer{h: sha256.New()} }}

// maxPooled bounds the buffers a released canonicalizer keeps: a big body's
// are dropped rather than held by the pool.
const maxPooled = 64 << 10

// canonicalize writes body in canonical JSON without the API's ignored
// fields; the caller reads c.out, c.key and c.facts, then calls c.release.
func canonicalize(api API, body []byte) (*canonicalizer, error) {
	c := canonPool.Get().(*canonicalizer)
	c.src, c.i, c.skip = body, 0, ignoredFields[api]
	c.out, c.fb, c.members = c.out[:0], c.fb[:0], c.members[:0]
	c.temp, c.gen, c.so = span{}, span{}, span{}
	c.ws()
	if c.i >= len(c.src) || c.src[c.i] != '{' || !c.object(true) {
		c.release()
		return nil, ErrBadBody
	}
	c.ws()
	if c.i != len(c.src) {
		c.release()
		return nil, ErrBadBody
	}
	return c, nil
}

// release returns c to the pool; nothing of it may be used after.
func (c *canonicalizer) release() {
	c.src, c.skip = nil, nil
	if cap(c.out) > maxPooled || cap(c.tmp) > maxPooled || cap(c.fb) > maxPooled {
		c.out, c.tmp, c.fb = nil, nil, nil
	}
	clear(c.members[:cap(c.members)]) // names point into bodies
	canonPool.Put(c)
}

// facts are what the policy reads of the body; their bytes are c's.
func (c *canonicalizer) facts() bodyFacts {
	var f bodyFacts
	get := func(s span) []byte {
		if !s.ok {
			return nil
		}
		return c.fb[s.start:s.end:s.end]
	}
	f.temperature, f.genConfig, f.streamOpts = get(c.temp), get(c.gen), get(c.so)
	if f.streamOpts != nil {
		f.includeUsage = bytes.Contains(f.streamOpts, []byte(`"include_usage":true`))
	}
	return f
}

// key is exactKey(req, scopeID(t, l), c.out), hashed from c's buffers.
func (c *canonicalizer) key(req *Request, t Tenant, l Level) Key {
	b := appendPart(c.hdr[:0], keyVersion)
	b = appendPart(b, string(req.API))
	b = appendPart(b, req.Model)
	b = appendScope(b, t, l)
	b = appendPart(b, req.Vary)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(c.out)))
	c.hdr = b
	c.h.Reset()
	c.h.Write(b)
	c.h.Write(c.out)
	var k Key
	copy(k[:], c.h.Sum(c.sum[:0]))
	return k
}

// canonicalBody is body in canonical JSON without the API's ignored fields,
// and its facts, in buffers of their own.
func canonicalBody(api API, body []byte) ([]byte, bodyFacts, error) {
	c, err := canonicalize(api, body)
	if err != nil {
		return nil, bodyFacts{}, err
	}
	defer c.release()
	f := c.facts()
	clone := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		return append([]byte{}, b...)
	}
	f.temperature, f.genConfig, f.streamOpts = clone(f.temperature), clone(f.genConfig), clone(f.streamOpts)
	return append([]byte{}, c.out...), f, nil
}

func (c *canonicalizer) ws() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// value writes the canonical form of the value at c.i.
func (c *canonicalizer) value() bool {
	c.ws()
	if c.i >= len(c.src) {
		return false
	}
	switch c.src[c.i] {
	case '{':
		return c.object(false)
	case '[':
		return c.array()
	case '"':
		s, ok := c.str()
		if ok {
			c.writeString(s)
		}
		return ok
	case 't':
		return c.literal("true")
	case 'f':
		return c.literal("false")
	case 'n':
		return c.literal("null")
	default:
		return c.number()
	}
}

func (c *canonicalizer) literal(l string) bool {
	if !bytes.HasPrefix(c.src[c.i:], []byte(l)) {
		return false
	}
	c.i += len(l)
	c.out = append(c.out, l...)
	return true
}

func (c *canonicalizer) number() bool {
	start := c.i
	for c.i < len(c.src) {
		switch b := c.src[c.i]; {
		case b >= '0' && b <= '9', b == '-', b == '+', b == '.', b == 'e', b == 'E':
			c.i++
			continue
		}
		break
	}
	lit := c.src[start:c.i]
	if !validNumber(lit) {
		return false
	}
	if plainInt(lit) {
		c.out = append(c.out, lit...) // the common case: as it is
		return true
	}
	c.out = appendCanonicalNumber(c.out, lit)
	return true
}

// str reads a string at c.i: its decoded bytes (the source itself when it
// has no escape).
func (c *canonicalizer) str() ([]byte, bool) {
	start := c.i
	c.i++
	esc := false
	for c.i < len(c.src) {
		switch b := c.src[c.i]; {
		case b == '"':
			c.i++
			raw := c.src[start:c.i]
			if !esc {
				s := raw[1 : len(raw)-1]
				return s, utf8.Valid(s)
			}
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return nil, false
			}
			return []byte(s), true
		case b == '\\':
			esc = true
			c.i += 2
		case b < 0x20:
			return nil, false
		default:
			c.i++
		}
	}
	return nil, false
}

// writeString writes s quoted, escaping only '"', '\\' and control
// characters.
func (c *canonicalizer) writeString(s []byte) {
	c.out = append(c.out, '"')
	for _, b := range s {
		switch {
		case b == '"' || b == '\\':
			c.out = append(c.out, '\\', b)
		case b < 0x20:
			c.out = append(c.out, '\\', 'u', '0', '0', hexDigit[b>>4], hexDigit[b&15])
		default:
			c.out = append(c.out, b)
		}
	}
	c.out = append(c.out, '"')
}

const hexDigit = "0123456789abcdef"

func (c *canonicalizer) array() bool {
	c.i++
	c.out = append(c.out, '[')
	c.ws()
	if c.i < len(c.src) && c.src[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return true
	}
	for n := 0; ; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		if !c.value() {
			return false
		}
		c.ws()
		if c.i >= len(c.src) {
			return false
		}
		switch c.src[c.i] {
		case ',':
			c.i++
		case ']':
			c.i++
			c.out = append(c.out, ']')
			return true
		default:
			return false
		}
	}
}

// object writes the object at c.i with its members sorted by name; top: the
// body itself (ignored fields left out, facts noted).
func (c *canonicalizer) object(top bool) bool {
	c.i++
	base := len(c.out)
	c.out = append(c.out, '{')
	mbase := len(c.members)
	c.ws()
	if c.i < len(c.src) && c.src[c.i] == '}' {
		c.i++
		c.out = append(c.out, '}')
		return true
	}
	for {
		c.ws()
		if c.i >= len(c.src) || c.src[c.i] != '"' {
			return false
		}
		name, ok := c.str()
		if !ok {
			return false
		}
		c.ws()
		if c.i >= len(c.src) || c.src[c.i] != ':' {
			return false
		}
		c.i++
		start := len(c.out)
		c.writeString(name)
		c.out = append(c.out, ':')
		vstart := len(c.out)
		if !c.value() {
			return false
		}
		if top && c.topMember(string(name), c.out[vstart:]) {
			c.out = c.out[:start] // left out of the key
		} else {
			c.members = append(c.members, member{name: name, start: start, end: len(c.out)})
		}
		c.ws()
		if c.i >= len(c.src) {
			return false
		}
		if c.src[c.i] == ',' {
			c.i++
			continue
		}
		if c.src[c.i] != '}' {
			return false
		}
		c.i++
		break
	}
	members := c.members[mbase:]
	if !slices.IsSortedFunc(members, func(a, b member) int { return bytes.Compare(a.name, b.name) }) {
		slices.SortStableFunc(members, func(a, b member) int { return bytes.Compare(a.name, b.name) })
	}
	// The members were written one after the other: write them again in
	// order, with commas between them.
	c.tmp = append(c.tmp[:0], c.out[base+1:]...)
	off := base + 1
	c.out = c.out[:base+1]
	for _, m := range members {
		c.out = append(c.out, c.tmp[m.start-off:m.end-off]...)
		c.out = append(c.out, ',')
	}
	if len(members) > 0 {
		c.out = c.out[:len(c.out)-1]
	}
	c.out = append(c.out, '}')
	c.members = c.members[:mbase]
	return true
}

// topMember notes what the policy reads of a top-level member and reports
// whether it is left out of the key.
func (c *canonicalizer) topMember(name string, val []byte) bool {
	note := func(s *span) {
		start := len(c.fb)
		c.fb = append(c.fb, val...)
		*s = span{start: start, end: len(c.fb), ok: true}
	}
	switch name {
	case "temperature":
		note(&c.temp)
	case "generationConfig", "generation_config":
		note(&c.gen)
	case "stream_options":
		note(&c.so)
	}
	return slices.Contains(c.skip, name)
}

// validNumber reports whether b is a JSON number (RFC 8259 §6).
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	return i == len(b)
}

// plainInt reports whether a valid number is an integer other than -0:
// canonicalNumber keeps it as it is.
func plainInt(b []byte) bool {
	return !bytes.ContainsAny(b, ".eE") && string(b) != "-0"
}
