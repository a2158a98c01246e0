package guard

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzEquivalent: the detectors and mask, with their anchors and skips,
// find exactly what the byte-by-byte reference (reference_test.go) finds.
func FuzzEquivalent(f *testing.F) {
	for _, fx := range loadFixtures(f) {
		f.Add(fx.text)
	}
	f.Add([]byte(`..1.2.3.4 fe80::1 ::1 +44 20 7946 0958 (555) 123-4567 DE89 3704 0044 0532 0130 00`))
	f.Add([]byte(`{"a":"b\"c","d":["x@y.io\\u0040", 12, "AKIAIOSFODNN7EXAMPLE"]}`))
	withAnchors := func(find func([]byte, *anchors, []Finding) []Finding) func([]byte, []Finding) []Finding {
		return func(text []byte, dst []Finding) []Finding { return find(text, newAnchors(text, nil), dst) }
	}
	pairs := []struct {
		name      string
		fast, ref func([]byte, []Finding) []Finding
	}{
		{"cards", withAnchors(findCards), refFindCards},
		{"ssn", withAnchors(findSSNs), refFindSSNs},
		{"phones", withAnchors(findPhones), refFindPhones},
		{"ibans", withAnchors(findIBANs), refFindIBANs},
		{"ips", withAnchors(findIPs), refFindIPs},
		{"apikeys", withAnchors(findAPIKeys), refFindAPIKeys},
		{"aws", withAnchors(findAWSKeys), refFindAWSKeys},
		{"jwt", withAnchors(findJWTs), refFindJWTs},
		{"entropy", withAnchors(findHighEntropy), refFindHighEntropy},
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		for _, p := range pairs {
			require.Equal(t, p.ref(text, nil), p.fast(text, nil), "%s on %q", p.name, text)
		}
		for _, isJSON := range []bool{false, true} {
			want := refMask(make([]byte, len(text)), text, isJSON)
			require.Equal(t, string(want), string(mask(make([]byte, len(text)), text, isJSON)), "mask %q json=%v", text, isJSON)
		}
	})
}

// BenchmarkPII4KiB: the pii detectors and the mask on prompt4K, the fast
// ones against the byte-by-byte reference, in one run (cpu-µs/op).
func BenchmarkPII4KiB(b *testing.B) {
	body := prompt4K()
	ref := []func([]byte, []Finding) []Finding{findEmailsRef, refFindCards, refFindIBANs, refFindSSNs, refFindPhones, refFindIPs}
	for _, bc := range []struct {
		name string
		run  func(masked []byte, dst []Finding) []Finding
	}{
		{"fast", typedFinder(piiDetectors).find},
		{"reference", func(masked []byte, dst []Finding) []Finding {
			for _, f := range ref {
				dst = f(masked, dst)
			}
			return dst
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			masked := make([]byte, len(body))
			var fs []Finding
			start := selfCPU(b)
			for b.Loop() {
				if bc.name == "fast" {
					mask(masked, body, true)
				} else {
					refMask(masked, body, true)
				}
				if fs = bc.run(masked, fs[:0]); len(fs) > 0 {
					b.Fatal("no match expected")
				}
			}
			b.ReportMetric(float64((selfCPU(b)-start).Nanoseconds())/float64(b.N)/1e3, "cpu-µs/op")
		})
	}
}

func findEmailsRef(text []byte, dst []Finding) []Finding { return findEmails(text, nil, dst) }
