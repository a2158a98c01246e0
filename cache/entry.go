package cache

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Entry is one cached reply: the client API's non-stream reply body (a
// stream is folded into it, collect.go), enough to replay it either way, with
// what it cost when it was served.
type Entry struct {
	API API
	// Body is kept byte for byte: a plain hit returns it as the provider
	// (or the gateway's translation) wrote it.
	Body []byte
	// Usage is the reply's usage as the gateway settled it; Cost what that
	// cost, which a hit saves.
	Usage kernel.Usage
	Cost  kernel.Money
	// Created is when the entry was stored (the reply's age on a hit).
	Created time.Time
}

// entryVersion is the first byte of an encoded entry. The rest: the API
// (a length byte and its bytes), the five token counts of the usage, the cost
// and the time stored (Unix nanoseconds), each a big-endian int64, then the
// body.
const entryVersion = '2'

const entryFixed = 1 + 1 + 7*8

var errBadEntry = errors.New("cache: unreadable entry")

// encode is e's stored form.
func (e *Entry) encode() ([]byte, error) {
	if len(e.API) > 255 {
		return nil, errBadEntry
	}
	b := make([]byte, 0, entryFixed+len(e.API)+len(e.Body))
	b = append(b, entryVersion, byte(len(e.API)))
	b = append(b, e.API...)
	u := &e.Usage
	for _, n := range [...]int64{u.Input, u.CachedInput, u.CacheWrite, u.Output, u.Reasoning, int64(e.Cost), e.Created.UnixNano()} {
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, e.Body...), nil
}

// decodeEntry reads a stored entry; an entry of another version or API is
// unreadable (and treated as a miss). The entry's Body is b's.
func decodeEntry(b []byte, api API) (*Entry, error) {
	if len(b) < entryFixed || b[0] != entryVersion {
		return nil, errBadEntry
	}
	n := int(b[1])
	if len(b) < entryFixed+n+1 || string(b[2:2+n]) != string(api) {
		return nil, errBadEntry
	}
	var v [7]int64
	for i := range v {
		v[i] = int64(binary.BigEndian.Uint64(b[2+n+8*i:]))
	}
	return &Entry{
		API:     api,
		Usage:   kernel.Usage{Input: v[0], CachedInput: v[1], CacheWrite: v[2], Output: v[3], Reasoning: v[4]},
		Cost:    kernel.Money(v[5]),
		Created: time.Unix(0, v[6]).UTC(),
		Body:    b[entryFixed+n:],
	}, nil
}
