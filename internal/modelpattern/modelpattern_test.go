package modelpattern

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		p, name string
		want    bool
	}{
		{"claude-*", "claude-opus-4-8", true},
		{"claude-*", "claude-", true},
		{"claude-*", "claud", false},
		{"claude-*", "xclaude-opus", false},
		{"gpt-5*", "gpt-5", true},
		{"gpt-5*", "gpt-5.1-codex", true},
		{"gpt-5*", "gpt-4o", false},
		{"o*", "o3", true},
		{"o*", "gpt-4o", false},
		{"*-mini", "gpt-4.1-mini", true},
		{"*-mini", "gpt-4.1-mini-x", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXcYb", false},
		{"*", "", true},
		{"exact", "exact", true},
		{"exact", "exactly", false},
	} {
		require.Equal(t, c.want, Match(c.p, c.name), "%q ~ %q", c.p, c.name)
	}
}

func TestBestPrefersTheMostSpecific(t *testing.T) {
	ps := []string{"claude-*", "claude-opus-*", "*"}
	require.Equal(t, 1, Best(ps, "claude-opus-4-8"))
	require.Equal(t, 0, Best(ps, "claude-haiku-4-5"))
	require.Equal(t, 2, Best(ps, "mistral"))
	require.Equal(t, -1, Best(ps[:2], "mistral"))
}

func TestOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"claude-*", "claude-*", true},
		{"claude-*", "*-4-5", true},  // claude-4-5
		{"claude-*", "gpt-*", false}, // different literal prefixes
		{"gpt-*", "*-mini", true},    // gpt-mini
		{"a*", "*b", true},           // ab
		{"abc*", "*x", true},         // abcx
		{"ab", "a*c", false},         // a plain name the pattern misses
		{"a*c", "a*d", false},        // different last characters
		{"x*y*z", "*q*", true},       // xqyz
		{"claude-opus-*", "claude-*", true},
	} {
		require.Equal(t, c.want, Overlap(c.a, c.b), "%q ∩ %q", c.a, c.b)
		require.Equal(t, c.want, Overlap(c.b, c.a), "%q ∩ %q", c.b, c.a)
	}
}

// TestOverlapAgreesWithEnumeration checks Overlap against every name of up to
// five characters over a small alphabet, for every pair of short patterns.
func TestOverlapAgreesWithEnumeration(t *testing.T) {
	alpha := []byte("ab")
	var names []string
	var grow func(s string)
	grow = func(s string) {
		names = append(names, s)
		if len(s) < 5 {
			for _, c := range alpha {
				grow(s + string(c))
			}
		}
	}
	grow("")
	var pats []string
	var growP func(s string)
	growP = func(s string) {
		pats = append(pats, s)
		if len(s) < 3 {
			for _, c := range []byte("ab*") {
				growP(s + string(c))
			}
		}
	}
	growP("")
	for _, a := range pats {
		for _, b := range pats {
			want := false
			for _, n := range names {
				if Match(a, n) && Match(b, n) {
					want = true
					break
				}
			}
			require.Equal(t, want, Overlap(a, b), "%q ∩ %q", a, b)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("claude-*", "claude-opus")
	f.Add("a*b*c", "abc")
	f.Fuzz(func(t *testing.T, p, name string) {
		m := Match(p, name)
		if !IsPattern(p) {
			require.Equal(t, p == name, m)
		}
		if m {
			require.True(t, Overlap(p, p))
		}
	})
}
