package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// prompt4K is a chat request of about 4 KiB of prose with no match.
func prompt4K() []byte {
	para := "The gateway forwards each request to the provider chosen by its routing strategy, " +
		"records the usage it reports, and settles the cost against every budget in the hierarchy. "
	var b bytes.Buffer
	for b.Len() < 4096 {
		b.WriteString(para)
	}
	body, _ := json.Marshal(map[string]any{
		"model":    "gpt-4o-mini",
		"messages": []map[string]string{{"role": "system", "content": "You are terse."}, {"role": "user", "content": b.String()}},
	})
	return body
}

func benchSet(b *testing.B, kinds ...string) Set {
	var s Set
	for _, k := range kinds {
		sp := Spec{Name: k, Kind: k, Action: "redact", On: []string{"pre"}}
		if k == KindWords {
			sp.Words = []string{"confidential", "project falcon"}
		}
		s = append(s, mustCompile(b, sp))
	}
	return s
}

func BenchmarkCheck4KiB(b *testing.B) {
	body := prompt4K()
	for _, bc := range []struct {
		name  string
		kinds []string
	}{
		{"pii", []string{KindPII}},
		{"secrets", []string{KindSecrets}},
		{"words", []string{KindWords}},
		{"pii+secrets", []string{KindPII, KindSecrets}},
	} {
		s := benchSet(b, bc.kinds...)
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if v := s.Check(context.Background(), Pre, body, true); v.Text != nil || v.Blocked {
					b.Fatal("no match expected")
				}
			}
		})
	}
}

func BenchmarkRedactor(b *testing.B) {
	s := Set{mustCompile(b, Spec{Name: "pii", Kind: KindPII, Action: "redact", On: []string{"stream"}})}
	chunk := []byte("a token or two of streamed text ")
	b.ReportAllocs()
	for b.Loop() {
		r := s.NewRedactor(0)
		for range 64 {
			r.Push(chunk)
		}
		r.Flush()
	}
}
