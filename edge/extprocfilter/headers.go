package extprocfilter

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// Header is one header instance. Keys are lowercase.
type Header struct{ Key, Value string }

// Headers is an ordered header list, one entry per instance, pseudo-headers
// (:method, :path, :authority, :scheme, :status) first, like Envoy's header
// maps (R5.1).
type Headers []Header

// Get returns the first value of key (case-insensitive) and whether it exists.
func (h Headers) Get(key string) (string, bool) {
	key = strings.ToLower(key)
	for _, e := range h {
		if e.Key == key {
			return e.Value, true
		}
	}
	return "", false
}

// Value returns the first value of key, or "".
func (h Headers) Value(key string) string {
	v, _ := h.Get(key)
	return v
}

// Values returns every value of key in order.
func (h Headers) Values(key string) []string {
	key = strings.ToLower(key)
	var out []string
	for _, e := range h {
		if e.Key == key {
			out = append(out, e.Value)
		}
	}
	return out
}

// Has reports whether key is present.
func (h Headers) Has(key string) bool {
	_, ok := h.Get(key)
	return ok
}

// Set replaces the first instance of key and drops the others; a missing key is
// added (a pseudo-header at the end of the pseudo-header block).
func (h *Headers) Set(key, value string) { h.setLower(strings.ToLower(key), value) }

// setLower is Set of a lower-case key. The mutations call it and addLower
// with the names they lowered already: the set of a mutation runs at the
// deepest point of a request's goroutine (mutation.go), where another
// strings.ToLower frame made the 4 KiB stack grow to 8 KiB.
func (h *Headers) setLower(key, value string) {
	for i, e := range *h {
		if e.Key == key {
			(*h)[i].Value = value
			*h = append((*h)[:i+1], without((*h)[i+1:], key)...)
			return
		}
	}
	h.addLower(key, value)
}

// Add appends a new instance of key (a pseudo-header at the end of the
// pseudo-header block).
func (h *Headers) Add(key, value string) { h.addLower(strings.ToLower(key), value) }

// addLower is Add of a lower-case key.
func (h *Headers) addLower(key, value string) {
	if !strings.HasPrefix(key, ":") {
		*h = append(*h, Header{key, value})
		return
	}
	i := 0
	for i < len(*h) && strings.HasPrefix((*h)[i].Key, ":") {
		i++
	}
	*h = append(*h, Header{})
	copy((*h)[i+1:], (*h)[i:])
	(*h)[i] = Header{key, value}
}

// Del removes every instance of key.
func (h *Headers) Del(key string) {
	*h = without(*h, strings.ToLower(key))
}

// Clone returns a copy that shares nothing with h. The clone of nil is nil.
func (h Headers) Clone() Headers {
	if h == nil {
		return nil
	}
	return append(make(Headers, 0, len(h)), h...)
}

// byteSize is the sum of key and value lengths, Envoy's HeaderMap::byteSize.
func (h Headers) byteSize() int {
	n := 0
	for _, e := range h {
		n += len(e.Key) + len(e.Value)
	}
	return n
}

func without(h Headers, key string) Headers {
	out := h[:0]
	for _, e := range h {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}

// normalize lowercases keys and moves pseudo-headers first, keeping the order
// within each group; it returns a new list.
func (h Headers) normalize() Headers {
	// Room for the headers a processor usually sets, so that its mutation
	// does not copy the list again.
	out := make(Headers, 0, len(h)+8)
	for _, e := range h {
		if strings.HasPrefix(e.Key, ":") {
			out = append(out, Header{strings.ToLower(e.Key), e.Value})
		}
	}
	for _, e := range h {
		if !strings.HasPrefix(e.Key, ":") {
			out = append(out, Header{strings.ToLower(e.Key), e.Value})
		}
	}
	return out
}

// normalized reports whether h is already as normalize would return it:
// names lower-case, pseudo-headers first.
func (h Headers) normalized() bool {
	regular := false
	for _, e := range h {
		if strings.HasPrefix(e.Key, ":") {
			if regular {
				return false
			}
		} else {
			regular = true
		}
		for i := 0; i < len(e.Key); i++ {
			if c := e.Key[i]; 'A' <= c && c <= 'Z' {
				return false
			}
		}
	}
	return true
}

// toProto encodes headers as Envoy does: key and raw_value, value empty (R5.1).
func (h Headers) toProto() *corev3.HeaderMap {
	// One array for the values and one for their bytes, rather than two
	// allocations per header.
	m := &corev3.HeaderMap{Headers: make([]*corev3.HeaderValue, len(h))}
	vals := make([]corev3.HeaderValue, len(h))
	n := 0
	for _, e := range h {
		n += len(e.Value)
	}
	raw := make([]byte, 0, n)
	for i, e := range h {
		start := len(raw)
		raw = append(raw, e.Value...)
		vals[i].Key, vals[i].RawValue = e.Key, raw[start:len(raw):len(raw)]
		m.Headers[i] = &vals[i]
	}
	return m
}

// HeadersFromProto decodes a HeaderMap, reading raw_value and falling back to
// value when raw_value is empty. It is a helper for fake processors in tests.
func HeadersFromProto(m *corev3.HeaderMap) Headers {
	out := make(Headers, 0, len(m.GetHeaders()))
	for _, e := range m.GetHeaders() {
		v := string(e.GetRawValue())
		if v == "" {
			v = e.GetValue()
		}
		out = append(out, Header{strings.ToLower(e.GetKey()), v})
	}
	return out
}
