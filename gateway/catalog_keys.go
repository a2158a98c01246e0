package gateway

import (
	"context"
	"slices"

	"github.com/tollgate-ai/tollgate/extproc"
)

var _ extproc.KeyLookup = (*Catalog)(nil)

// KeyByID implements extproc.KeyLookup: the key's principal and the stored
// hashes of its secrets valid now, sorted (the HMAC keys of per-try
// routing's signed client header: every replica reads them from the store,
// a client never sees them).
func (c *Catalog) KeyByID(_ context.Context, id string) (*extproc.Principal, [][]byte, error) {
	s := c.snap.Load()
	now := c.now()
	var pr *extproc.Principal
	var out [][]byte
	for _, h := range s.keyHashes[id] {
		e := s.keys[h]
		if e == nil || !e.validUntil.IsZero() && !now.Before(e.validUntil) {
			continue
		}
		pr, out = &e.principal, append(out, []byte(h))
	}
	if pr == nil {
		return nil, nil, extproc.ErrUnauthorized
	}
	slices.SortFunc(out, func(a, b []byte) int { return slices.Compare(a, b) })
	return pr, out, nil
}
