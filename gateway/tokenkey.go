package gateway

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tollgate-ai/tollgate/store"
)

// tokenKeyID names the store secret that signs retry tokens.
const tokenKeyID = "retry-token-key"

// tokenKeyDoc is the stored form of a shared secret.
type tokenKeyDoc struct {
	Key []byte `json:"key"`
}

// sharedTokenKey returns the key every replica on this store signs retry
// tokens with: a fallback redirect's recreated request (docs/envoy.md) may
// reach another replica's processor, which must honour the token. The first
// replica to start creates it; the others read it (create-only Put, so two
// starting together agree).
func sharedTokenKey(ctx context.Context, st store.Config) ([]byte, error) {
	for range 3 {
		obj, err := st.Get(ctx, store.KindSecret, tokenKeyID)
		if err == nil {
			var d tokenKeyDoc
			if err := json.Unmarshal(obj.Doc, &d); err != nil || len(d.Key) < 32 {
				return nil, fmt.Errorf("gateway: stored %s %q is not a key", store.KindSecret, tokenKeyID)
			}
			return d.Key, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, fmt.Errorf("gateway: read the retry token key: %w", err)
		}
		d := tokenKeyDoc{Key: make([]byte, 32)}
		_, _ = crand.Read(d.Key)
		doc, _ := json.Marshal(d)
		_, err = st.Put(ctx, store.Object{Kind: store.KindSecret, ID: tokenKeyID, Doc: doc}, 0)
		if err == nil {
			return d.Key, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("gateway: store the retry token key: %w", err)
		}
		// Another replica created it first: read theirs.
	}
	return nil, errors.New("gateway: retry token key: the store kept changing it")
}
