// Package secret makes and checks the secrets Tollgate hands out (virtual keys and
// admin credentials) and seals provider credentials at rest with AES-256-GCM.
// It imports the standard library only.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
)

// Errors.
var (
	// ErrMasterKey: the master key is missing or malformed.
	ErrMasterKey = errors.New("secret: master key must be 32 bytes, hex or base64 encoded")
	// ErrSealed: a sealed value could not be opened (wrong master key or corrupted).
	ErrSealed = errors.New("secret: cannot open sealed value")
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// New returns a fresh secret: prefix followed by 32 random bytes in base62
// (43 characters), e.g. New("tg-") for a virtual key.
func New(prefix string) string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("secret: crypto/rand failed: %v", err)) // never happens on Linux
	}
	n := new(big.Int).SetBytes(b[:])
	out := make([]byte, 0, 43)
	base := big.NewInt(62)
	mod := new(big.Int)
	for range 43 {
		n.DivMod(n, base, mod)
		out = append(out, base62[mod.Int64()])
	}
	return prefix + string(out)
}

// Hash is the stored form of a secret: hex SHA-256.
func Hash(secret string) string {
	var b [HashLen]byte
	return string(AppendHash(b[:0], secret))
}

// HashLen is the length of a Hash.
const HashLen = 2 * sha256.Size

// AppendHash appends Hash(secret) to dst: with dst on the caller's stack, a
// lookup by hash (a map index with string(AppendHash(…))) allocates nothing,
// where Hash's string and hex.EncodeToString's buffer were two allocations
// per request authenticated.
func AppendHash(dst []byte, secret string) []byte {
	var buf [128]byte // the secret's bytes: []byte(secret) allocates above 32
	sum := sha256.Sum256(append(buf[:0], secret...))
	return hex.AppendEncode(dst, sum[:])
}

// Display is the part of a secret safe to show: the prefix and 4 characters.
func Display(secret string) string {
	if i := strings.IndexByte(secret, '-'); i >= 0 && len(secret) > i+5 {
		return secret[:i+5] + "…"
	}
	return "…"
}

// Sealer seals and opens provider credentials with AES-256-GCM.
type Sealer struct{ aead cipher.AEAD }

// NewSealer takes a 32-byte master key.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != 32 {
		return nil, ErrMasterKey
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// ParseMasterKey decodes a master key given as 64 hex characters.
func ParseMasterKey(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != 32 {
		return nil, ErrMasterKey
	}
	return b, nil
}

// LoadOrCreateMasterKey reads a hex master key from path, creating it (mode 0600)
// with a random key when the file does not exist.
func LoadOrCreateMasterKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return ParseMasterKey(string(b))
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("secret: read master key: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	if err := os.WriteFile(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("secret: write master key: %w", err)
	}
	return key, nil
}

// Seal encrypts plaintext; the nonce is prepended to the result.
func (s *Sealer) Seal(plaintext []byte) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic(fmt.Sprintf("secret: crypto/rand failed: %v", err))
	}
	return s.aead.Seal(nonce, nonce, plaintext, nil)
}

// Open decrypts what Seal produced.
func (s *Sealer) Open(sealed []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n+s.aead.Overhead() {
		return nil, ErrSealed
	}
	out, err := s.aead.Open(nil, sealed[:n], sealed[n:], nil)
	if err != nil {
		return nil, ErrSealed
	}
	return out, nil
}
