package xds

import (
	"errors"
	"testing"
)

// FuzzBuild: whatever the input, Build either refuses it as invalid input or
// returns resources that pass Envoy's validation. It never produces a
// resource Envoy would reject (ErrInvalidResource), and never panics.
func FuzzBuild(f *testing.F) {
	f.Add("127.0.0.1:9002", "d1", "https", "api.example.com", uint32(443), "", true, int64(0))
	f.Add("unix:/run/tollgate/extproc.sock", "vllm.local", "http", "10.0.0.7", uint32(8000), "", false, int64(1<<20))
	f.Add("extproc:9002", "x", "https", "10.0.0.7", uint32(0), "llm.internal", true, int64(-1))
	f.Add("[::1]:9002", "a_b-c.d", "HTTP", "::1", uint32(65535), "", false, int64(1<<32))
	f.Add("0.0.0.0:1", "", "https", "", uint32(1), "sni", false, int64(1))
	f.Fuzz(func(t *testing.T, extProc, id, scheme, host string, port uint32, sni string, h2 bool, maxBody int64) {
		addr, err := ParseAddress(extProc)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("ParseAddress(%q): error %v does not wrap ErrInvalidInput", extProc, err)
			}
			return
		}
		in := &Input{
			ExtProc:             addr,
			MaxRequestBodyBytes: maxBody,
			Upstreams:           []Upstream{{Deployment: id, Scheme: scheme, Host: host, Port: port, SNI: sni, HTTP2: h2}},
		}
		snap, err := Build(in, "")
		if err != nil {
			if errors.Is(err, ErrInvalidResource) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("Build(%+v): %v", in, err)
			}
			return
		}
		if err := snap.Consistent(); err != nil {
			t.Fatalf("inconsistent snapshot: %v", err)
		}
	})
}
