package secret

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewIsBase62AndUnique(t *testing.T) {
	a, b := New("tg-"), New("tg-")
	require.NotEqual(t, a, b)
	require.True(t, strings.HasPrefix(a, "tg-"))
	require.Len(t, a, 3+43)
	for _, c := range a[3:] {
		require.Contains(t, base62, string(c))
	}
	require.Equal(t, a[:7]+"…", Display(a))
}

func TestHashIsStable(t *testing.T) {
	require.Equal(t, "82148296d7410612bf13e01b7ba0d39f1ea4031ffcf197b89cc7105186c1de2e", Hash("tg-x"), "hex SHA-256")
	require.NotEqual(t, Hash("tg-x"), Hash("tg-y"))
	require.Len(t, Hash("tg-x"), 64)
}

func TestSealRoundTripAndTamper(t *testing.T) {
	key, err := LoadOrCreateMasterKey(filepath.Join(t.TempDir(), "master.key"))
	require.NoError(t, err)
	s, err := NewSealer(key)
	require.NoError(t, err)
	sealed := s.Seal([]byte("sk-provider"))
	require.NotContains(t, string(sealed), "sk-provider")
	got, err := s.Open(sealed)
	require.NoError(t, err)
	require.Equal(t, "sk-provider", string(got))

	sealed[len(sealed)-1] ^= 1
	_, err = s.Open(sealed)
	require.ErrorIs(t, err, ErrSealed)

	other, err := NewSealer(make([]byte, 32))
	require.NoError(t, err)
	_, err = other.Open(s.Seal([]byte("x")))
	require.ErrorIs(t, err, ErrSealed)
}

func TestMasterKeyFileIsReused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	a, err := LoadOrCreateMasterKey(p)
	require.NoError(t, err)
	b, err := LoadOrCreateMasterKey(p)
	require.NoError(t, err)
	require.Equal(t, a, b)
	_, err = ParseMasterKey("abc")
	require.ErrorIs(t, err, ErrMasterKey)
}

// AppendHash is Hash appended, and a lookup with it allocates nothing.
func TestAppendHashAllocatesNothing(t *testing.T) {
	require.Equal(t, Hash("tg-x"), string(AppendHash([]byte(nil), "tg-x")))
	require.Equal(t, "p:"+Hash("tg-y"), string(AppendHash([]byte("p:"), "tg-y")))
	long := strings.Repeat("k", 200) // above AppendHash's buffer
	sum := sha256.Sum256([]byte(long))
	require.Equal(t, hex.EncodeToString(sum[:]), Hash(long))
	key := New("tg-") // 46 bytes: []byte(key) would allocate
	m := map[string]int{Hash(key): 1}
	allocs := testing.AllocsPerRun(100, func() {
		var b [HashLen]byte
		if m[string(AppendHash(b[:0], key))] != 1 {
			t.Fatal("not found")
		}
	})
	require.Zero(t, allocs)
}
