package extprocfilter_test

import (
	"slices"
	"testing"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/testing/protocmp"
)

func TestHeaders(t *testing.T) {
	cases := []struct {
		name string
		op   func(h *Headers)
		want Headers
	}{
		{"set replaces the first and drops the rest", func(h *Headers) { h.Set("X-A", "z") }, Headers{{":method", "GET"}, {":path", "/"}, {"x-a", "z"}, {"x-b", "3"}}},
		{"set adds", func(h *Headers) { h.Set("x-c", "4") }, Headers{{":method", "GET"}, {":path", "/"}, {"x-a", "1"}, {"x-a", "2"}, {"x-b", "3"}, {"x-c", "4"}}},
		{"pseudo-headers stay first", func(h *Headers) { h.Set(":authority", "h") }, Headers{{":method", "GET"}, {":path", "/"}, {":authority", "h"}, {"x-a", "1"}, {"x-a", "2"}, {"x-b", "3"}}},
		{"add appends an instance", func(h *Headers) { h.Add("x-b", "4") }, Headers{{":method", "GET"}, {":path", "/"}, {"x-a", "1"}, {"x-a", "2"}, {"x-b", "3"}, {"x-b", "4"}}},
		{"del removes every instance", func(h *Headers) { h.Del("X-A") }, Headers{{":method", "GET"}, {":path", "/"}, {"x-b", "3"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := Headers{{":method", "GET"}, {":path", "/"}, {"x-a", "1"}, {"x-a", "2"}, {"x-b", "3"}}
			orig := h.Clone()
			c := h.Clone()
			tc.op(&c)
			require.Equal(t, tc.want, c)
			require.Equal(t, orig, h) // clones share nothing
		})
	}
	h := Headers{{"x-a", "1"}, {"x-a", "2"}}
	v, ok := h.Get("X-A")
	require.True(t, ok)
	require.Equal(t, "1", v)
	require.Equal(t, []string{"1", "2"}, h.Values("x-a"))
	require.False(t, h.Has("x-b"))
	require.Empty(t, h.Value("x-b"))
	require.Nil(t, Headers(nil).Clone())
}

func TestHeadersNormalizeAndProto(t *testing.T) {
	h := Headers{{"Content-Type", "a"}, {":Path", "/"}, {"x-b", "b"}, {":method", "GET"}}.Normalize()
	require.Equal(t, Headers{{":path", "/"}, {":method", "GET"}, {"content-type", "a"}, {"x-b", "b"}}, h)
	m := h.ToProto()
	require.Empty(t, cmp.Diff(&corev3.HeaderMap{Headers: []*corev3.HeaderValue{
		{Key: ":path", RawValue: []byte("/")},
		{Key: ":method", RawValue: []byte("GET")},
		{Key: "content-type", RawValue: []byte("a")},
		{Key: "x-b", RawValue: []byte("b")},
	}}, m, protocmp.Transform()))
	require.Equal(t, h, HeadersFromProto(m))
	// value is read when raw_value is empty.
	require.Equal(t, Headers{{"x-v", "old"}}, HeadersFromProto(&corev3.HeaderMap{Headers: []*corev3.HeaderValue{{Key: "X-V", Value: "old"}}}))
}

func TestHeadersNormalized(t *testing.T) {
	for _, tc := range []struct {
		h    Headers
		want bool
	}{
		{nil, true},
		{Headers{{":method", "GET"}, {":path", "/"}, {"x-a", "A"}}, true},
		{Headers{{"x-a", "a"}, {"content-type", "b"}}, true},
		{Headers{{":method", "GET"}, {"x-a", "a"}, {":path", "/"}}, false}, // a pseudo-header after a regular one
		{Headers{{":method", "GET"}, {"X-A", "a"}}, false},
		{Headers{{":Path", "/"}}, false},
	} {
		require.Equal(t, tc.want, tc.h.Normalized(), "%v", tc.h)
		require.Equal(t, tc.want, slices.Equal(tc.h.Normalize(), tc.h), "normalized agrees with normalize: %v", tc.h)
	}
}

// TestOwnedHeaders: with WithOwnedHeaders a list already in Envoy's form is
// held and mutated in place (no copy); any other list is normalised into a
// copy, as without the option, and the processor sees the same headers
// either way.
func TestOwnedHeaders(t *testing.T) {
	setter := func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet("x-set", "1"))})), nil
	}
	cfg := testConfig()
	for _, owned := range []bool{false, true} {
		var opts []StartOption
		if owned {
			opts = append(opts, WithOwnedHeaders())
		}
		fake := newFake(setter)
		in := make(Headers, 0, 8)
		in = append(in, getRequest().Headers.Normalize()...)
		res, err := NewClient(GRPC(Direct(fake)), cfg).Start(testCtx(t), opts...).RequestHeaders(in, true)
		require.NoError(t, err)
		require.True(t, res.Continue)
		require.Equal(t, "1", res.Headers.Value("x-set"))
		require.Equal(t, owned, &res.Headers[0] == &in[0], "owned=%v: the list is kept, not copied", owned)
		require.Equal(t, in[:len(getRequest().Headers)], HeadersFromProto(fake.received()[0].GetRequestHeaders().GetHeaders()))

		// Not in Envoy's form: copied and normalised even when owned.
		mixed := Headers{{"X-Mixed", "a"}, {":method", "GET"}, {":path", "/"}, {":authority", "a"}, {":scheme", "http"}}
		res, err = NewClient(GRPC(Direct(newFake(setter))), cfg).Start(testCtx(t), opts...).RequestHeaders(mixed, true)
		require.NoError(t, err)
		require.NotSame(t, &mixed[0], &res.Headers[0])
		require.Equal(t, "a", res.Headers.Value("x-mixed"))
		require.Equal(t, ":method", res.Headers[0].Key)
	}
}
