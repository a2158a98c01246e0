package routing

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTokenSignedAndChecked: a retry token reads back under its key only,
// and a changed byte makes it a first attempt.
func TestTokenSignedAndChecked(t *testing.T) {
	key := bytes.Repeat([]byte{7}, 32)
	a := Attempt{N: 2, Max: 3, Group: "big", Avoid: []string{"d1"}, Orig: "req-1"}
	tok := SignToken(key, a.Payload())
	got := ParseToken(bytes.Clone(key), tok)
	require.Equal(t, 2, got.N)
	require.Equal(t, "big", got.Group)
	require.Equal(t, "req-1", got.Orig)
	require.True(t, got.Avoids("d1"))

	require.Zero(t, ParseToken(NewTokenKey(), tok).N, "another key")
	forged := []byte(tok)
	forged[len(forged)-1] ^= 1
	require.Zero(t, ParseToken(key, string(forged)).N, "a forged signature")
	require.Zero(t, ParseToken(key, "a=2&m=3").N, "unsigned")
}

// TestClientHeaderRoundTrip: a signed client header gives back its fields
// (the path without a Gemini ?key=) until it expires, under its key only.
func TestClientHeaderRoundTrip(t *testing.T) {
	key := NewTokenKey()
	now := time.Unix(1_800_000_000, 0)
	f := ClientFields{
		KeyID: "k1", Expires: now.Add(ClientHeaderTTL).Unix(), Path: "/v1beta/models/g:generateContent?key=SECRET",
		Customer: "c", Version: "2023-06-01", Beta: "b1", Traceparent: "00-1-2-01", GoogleKey: true,
	}
	h := SignClient(key, f)
	require.NotContains(t, h, "SECRET")
	got, ok := ParseClient(key, h, now)
	require.True(t, ok)
	want := f
	want.Path = "/v1beta/models/g:generateContent"
	require.Equal(t, want, got)

	_, ok = ParseClient(key, h, now.Add(ClientHeaderTTL+time.Second))
	require.False(t, ok, "expired")
	_, ok = ParseClient(NewTokenKey(), h, now)
	require.False(t, ok, "another key")
	for _, bad := range []string{"", "garbage", "x.y", h[:len(h)-2]} {
		_, ok = ParseClient(key, bad, now)
		require.False(t, ok, bad)
	}
}

func TestWithoutQueryKey(t *testing.T) {
	for in, want := range map[string]string{
		"/v1beta/models/g:generateContent":                          "/v1beta/models/g:generateContent",
		"/v1beta/models/g:generateContent?key=SECRET":               "/v1beta/models/g:generateContent",
		"/v1beta/models/g:streamGenerateContent?alt=sse&key=SECRET": "/v1beta/models/g:streamGenerateContent?alt=sse",
		"/v1/chat/completions?monkey=1":                             "/v1/chat/completions?monkey=1",
	} {
		require.Equal(t, want, WithoutQueryKey(in), in)
	}
}

// TestReservedHeaderRoundTrip: the router-level stream's reservation reads
// back in the try; a malformed value is none.
func TestReservedHeaderRoundTrip(t *testing.T) {
	r := &Reserved{ID: "req-1", Dep: "d1", Max: 4096, Clamped: true, Why: FallbackContextWindow}
	require.Equal(t, r, ParseReserved(r.Header()))
	r2 := &Reserved{ID: "req-2", Dep: "d2", Max: 0}
	require.Equal(t, r2, ParseReserved(r2.Header()))
	for _, bad := range []string{"", "req;d;1;0", ";d;1;0;", "req;d;x;0;"} {
		require.Nil(t, ParseReserved(bad), bad)
	}
}
