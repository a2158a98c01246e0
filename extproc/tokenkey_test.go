package extproc

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/routing"
)

// A retry token issued by one processor is honoured by another that shares
// its key (WithTokenKey), and ignored by one that does not.
func TestRetryTokenAcrossProcessors(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a := New(nil, nil, WithTokenKey(key))
	b := New(nil, nil, WithTokenKey(bytes.Clone(key)))
	other := New(nil, nil)
	unset := New(nil, nil, WithTokenKey(nil))

	tok := routing.SignToken(a.retryKey, "a=2&m=3&g=big&r=req-1")
	got := routing.ParseToken(b.retryKey, tok)
	require.Equal(t, 2, got.N)
	require.Equal(t, "big", got.Group)
	require.Equal(t, "req-1", got.Orig)

	require.Zero(t, routing.ParseToken(other.retryKey, tok).N, "another key: routed as a first attempt")
	require.Zero(t, routing.ParseToken(unset.retryKey, tok).N)
	require.NotEmpty(t, unset.retryKey, "no key given: a random one")
	forged := []byte(tok)
	forged[len(forged)-1] ^= 1
	require.Zero(t, routing.ParseToken(b.retryKey, string(forged)).N, "a forged signature")
}
