package cache

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/tollgate-ai/tollgate/kernel"
)

// Entry is one cached reply: the client API's non-stream reply body (a
// stream is folded into it, collect.go), enough to replay it either way, with
// what it cost when it was served.
type Entry struct {
	API API `json:"api"`
	// Body is kept byte for byte: a plain hit returns it as the provider
	// (or the gateway's translation) wrote it.
	Body []byte `json:"-"`
	// Usage is the reply's usage as the gateway settled it; Cost what that
	// cost, which a hit saves.
	Usage kernel.Usage `json:"usage"`
	Cost  kernel.Money `json:"cost"`
	// Created is when the entry was stored (the reply's age on a hit).
	Created time.Time `json:"created"`
}

// entryVersion is the first byte of an encoded entry: the version, then the
// length of the JSON of the other members (4 bytes, big-endian), that JSON
// and the body.
const entryVersion = '1'

var errBadEntry = errors.New("cache: unreadable entry")

// encode is e's stored form.
func (e *Entry) encode() ([]byte, error) {
	meta, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 5+len(meta)+len(e.Body))
	b = append(b, entryVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(meta)))
	return append(append(b, meta...), e.Body...), nil
}

// decodeEntry reads a stored entry; an entry of another version or API is
// unreadable (and treated as a miss).
func decodeEntry(b []byte, api API) (*Entry, error) {
	if len(b) < 5 || b[0] != entryVersion {
		return nil, errBadEntry
	}
	n := int(binary.BigEndian.Uint32(b[1:5]))
	if n > len(b)-5 {
		return nil, errBadEntry
	}
	var e Entry
	if err := json.Unmarshal(b[5:5+n], &e); err != nil || e.API != api || len(b) == 5+n {
		return nil, errBadEntry
	}
	e.Body = b[5+n:]
	return &e, nil
}
