package gateway

import (
	"context"

	"github.com/tollgate-ai/tollgate/extproc"
)

var _ extproc.KeyLookup = (*Catalog)(nil)

// KeyByID implements extproc.KeyLookup: the principal of the key with id
// when one of its secrets is valid now (per-try routing's signed client
// header names the key by id).
func (c *Catalog) KeyByID(_ context.Context, id string) (*extproc.Principal, error) {
	s := c.snap.Load()
	now := c.now()
	for _, h := range s.keyHashes[id] {
		if e := s.keys[h]; e != nil && (e.validUntil.IsZero() || now.Before(e.validUntil)) {
			return &e.principal, nil
		}
	}
	return nil, extproc.ErrUnauthorized
}
