package mockllm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokensOf(t *testing.T) {
	for _, tc := range []struct{ bytes, want int }{{0, 0}, {1, 1}, {4, 1}, {5, 2}, {8, 2}, {9, 3}} {
		require.Equal(t, int64(tc.want), tokensOf(tc.bytes), "bytes=%d", tc.bytes)
	}
}

func TestOutputTokens(t *testing.T) {
	three, big, neg := int64(3), int64(100), int64(-1)
	n, capped := outputTokens(&three, 16)
	require.Equal(t, int64(3), n)
	require.True(t, capped)
	n, capped = outputTokens(&big, 16)
	require.Equal(t, int64(16), n)
	require.False(t, capped)
	n, capped = outputTokens(nil, 16)
	require.Equal(t, int64(16), n)
	require.False(t, capped)
	n, _ = outputTokens(&neg, 16)
	require.Equal(t, int64(16), n)
}

func TestReplyChunks(t *testing.T) {
	r := newReply("a b c", 10)
	require.Equal(t, "a b c a b c a b c a", r.text())
	for _, c := range []int{0, 1, 3, 4, 10, 50} {
		texts, counts := r.chunks(c)
		want := c
		if c == 0 || c > 10 {
			want = 10
		}
		require.Len(t, texts, want, "chunks=%d", c)
		require.Equal(t, r.text(), strings.Join(texts, ""), "chunks=%d", c)
		var sum int64
		for _, n := range counts {
			sum += n
		}
		require.Equal(t, int64(10), sum)
	}
	texts, _ := newReply("", 0).chunks(3)
	require.Empty(t, texts)
	require.Equal(t, "mock mock", newReply("  \n", 2).text())
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"plain", `q"uote\`, "new\nline\ttab\r", "\x01ctl", "héllo ✓", "bad\xffutf8"} {
		got := string(appendString(nil, s))
		require.Equal(t, strings.ToValidUTF8(s, "\uFFFD"), jsonOf(t, `{"s":`+got+`}`)["s"])
	}
}
