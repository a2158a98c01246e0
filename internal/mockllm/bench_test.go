package mockllm

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

// discardWriter is a ResponseWriter and Flusher that keeps nothing but the
// bytes count: the benchmarks measure the handler, not a server.
type discardWriter struct {
	h http.Header
	n int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *discardWriter) Flush()                      {}

// BenchmarkHandler is the mock's own CPU per request of bench/run.sh's
// requests (bench/loadgen), without net/http's server.
func BenchmarkHandler(b *testing.B) {
	const prompt = `"messages":[{"role":"user","content":"Say hello to the benchmark"}],"max_tokens":16}`
	for _, bc := range []struct {
		name, path, body string
	}{
		{"chat", "/v1/chat/completions", `{"model":"mock-gpt",` + prompt},
		{"stream", "/v1/chat/completions", `{"model":"mock-gpt","stream":true,` + prompt},
		{"embeddings", "/v1/embeddings", `{"model":"mock-gpt","input":"embed this sentence for the benchmark"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(DefaultConfig())
			body := []byte(bc.body)
			r, err := http.NewRequest(http.MethodPost, "http://mock"+bc.path, nil)
			if err != nil {
				b.Fatal(err)
			}
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer sk-bench")
			r.ContentLength = int64(len(body))
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				r.Body = io.NopCloser(bytes.NewReader(body))
				clear(w.h)
				s.ServeHTTP(w, r)
			}
			if got := s.Stats().Total; got.Requests == 0 || got.Errors != 0 || got.Aborted != 0 {
				b.Fatalf("stats %+v", got)
			}
		})
	}
}
