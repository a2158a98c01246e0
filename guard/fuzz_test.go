package guard

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzScan: every finding lies in the text, redaction of a valid JSON
// document stays valid JSON, and the stream redactor, whatever the split and
// with a window smaller than the text, gives what redacting the whole text
// gives, as long as the text fits in its context (contextBytes) and every
// match fits in the window.
func FuzzScan(f *testing.F) {
	for _, fx := range loadFixtures(f) {
		f.Add(fx.text, uint8(7))
	}
	f.Add([]byte(`{"messages":[{"content":"a\"b@c.de\\u0040x.io"}]}`), uint8(3))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nabc"), uint8(12))
	all := append(typedFinder(nil), append(piiDetectors, secretDetectors...)...)
	pii := mustCompile(f, Spec{Name: "pii", Kind: KindPII, Action: "redact", On: []string{"pre", "stream"}})
	sec := mustCompile(f, Spec{Name: "sec", Kind: KindSecrets, Action: "redact", On: []string{"pre", "stream"}})
	set := Set{pii, sec}
	f.Fuzz(func(t *testing.T, text []byte, cut uint8) {
		for _, fd := range all.find(text, nil) {
			require.True(t, 0 <= fd.Start && fd.Start < fd.End && fd.End <= len(text), "%+v", fd)
		}
		if json.Valid(text) {
			v := set.Check(context.Background(), Pre, text, true)
			if v.Text != nil {
				require.True(t, json.Valid(v.Text), "redacted %q into %q", text, v.Text)
			}
		}
		// Stream: split into pieces of cut bytes (plain text, no escapes).
		plain := maskSegment(make([]byte, len(text)), text)
		n := int(cut%16) + 1
		const window = 64
		r := set.NewRedactor(window)
		var out []byte
		for i := 0; i < len(plain); i += n {
			segs, _ := r.Push(plain[i:min(i+n, len(plain))])
			for _, s := range segs {
				out = append(out, s...)
			}
		}
		segs, _ := r.Flush()
		for _, s := range segs {
			out = append(out, s...)
		}
		require.Zero(t, r.Pending())
		whole := set.Check(context.Background(), Pre, plain, false)
		want := whole.Text
		if want == nil {
			want = plain
		}
		fits := len(plain) <= contextBytes
		for _, fd := range all.find(plain, nil) {
			fits = fits && fd.End-fd.Start <= window
		}
		if fits {
			require.Equal(t, string(want), string(out), "split every %d bytes", n)
		}
	})
}
