package extprocfilter

import (
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func TestApplyHeaderMutation(t *testing.T) {
	base := Headers{{":method", "POST"}, {":path", "/v1"}, {":authority", "gw"}, {":scheme", "http"}, {"host", "gw"}, {"content-length", "2"}, {"x-a", "1"}}
	many := make([]string, 101)
	for i := range many {
		many[i] = "x-r"
	}
	cases := []struct {
		name     string
		cfg      func(*Config)
		m        *extprocv3.HeaderMutation
		opts     mutationOptions
		want     Headers // nil: unchanged
		rejected int
		err      error
		msg      string
	}{
		{
			name: "remove then set", m: &extprocv3.HeaderMutation{RemoveHeaders: []string{"x-a"}, SetHeaders: []*corev3.HeaderValueOption{rawSet("x-a", "2")}},
			want: Headers{{":method", "POST"}, {":path", "/v1"}, {":authority", "gw"}, {":scheme", "http"}, {"host", "gw"}, {"content-length", "2"}, {"x-a", "2"}},
		},
		{
			name: "set keys are lowercased", m: setHeaders(rawSet("X-New", "v")),
			want: append(base.Clone(), Header{"x-new", "v"}),
		},
		{name: "denied host ignored", cfg: func(c *Config) { c.DisallowIsError = false }, m: setHeaders(rawSet("host", "evil")), rejected: 1},
		{name: "denied x-envoy ignored", cfg: func(c *Config) { c.DisallowIsError = false }, m: setHeaders(rawSet("X-Envoy-Retry-On", "5xx")), rejected: 1},
		{
			name: "allow_all_routing", cfg: func(c *Config) { c.AllowAllRouting = true }, m: setHeaders(rawSet(":authority", "api.openai.com")),
			want: Headers{{":method", "POST"}, {":path", "/v1"}, {":authority", "api.openai.com"}, {":scheme", "http"}, {"host", "gw"}, {"content-length", "2"}, {"x-a", "1"}},
		},
		{name: "invalid authority even when routing is allowed", cfg: func(c *Config) { c.AllowAllRouting = true }, m: setHeaders(rawSet(":authority", "a/b")), err: ErrDisallowedMutation},
		{name: "allow_envoy", cfg: func(c *Config) { c.AllowEnvoy = true }, m: setHeaders(rawSet("x-envoy-retry-on", "5xx")), want: append(base.Clone(), Header{"x-envoy-retry-on", "5xx"})},
		{name: "disallow_system", cfg: func(c *Config) { c.DisallowSystem = true }, m: setHeaders(rawSet(":path", "/v2")), err: ErrDisallowedMutation},
		{name: "disallow_all", cfg: func(c *Config) { c.DisallowAll = true }, m: setHeaders(rawSet("x-a", "2")), err: ErrDisallowedMutation},
		{
			name: ":method allowed when replacing", m: setHeaders(rawSet(":method", "GET")), opts: mutationOptions{replacing: true},
			want: Headers{{":method", "GET"}, {":path", "/v1"}, {":authority", "gw"}, {":scheme", "http"}, {"host", "gw"}, {"content-length", "2"}, {"x-a", "1"}},
		},
		{name: "content-length skipped when stripped", m: setHeaders(rawSet("content-length", "9")), opts: mutationOptions{stripCL: true}},
		{
			name: "append_action is ignored: overwrite", m: setHeaders(&corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-a", RawValue: []byte("2")}, AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD}),
			want: Headers{{":method", "POST"}, {":path", "/v1"}, {":authority", "gw"}, {":scheme", "http"}, {"host", "gw"}, {"content-length", "2"}, {"x-a", "2"}},
		},
		{
			name: "append true adds", m: setHeaders(&corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-a", RawValue: []byte("2")}, Append: wrapperspb.Bool(true)}),
			want: append(base.Clone(), Header{"x-a", "2"}),
		},
		{name: "nil header skipped", m: setHeaders(&corev3.HeaderValueOption{})},
		{name: "invalid name", m: setHeaders(rawSet("x a", "1")), err: ErrInvalidMutation, msg: "Invalid character in set_headers mutation."},
		{name: "invalid value", m: setHeaders(rawSet("x-a", "1\r\nx-b: 2")), err: ErrInvalidMutation, msg: "Invalid character in set_headers mutation."},
		{name: "upper-case pseudo-header", m: setHeaders(rawSet(":Path", "/")), err: ErrInvalidMutation},
		{name: "invalid remove", m: &extprocv3.HeaderMutation{RemoveHeaders: []string{""}}, err: ErrInvalidMutation, msg: "Invalid character in remove_headers mutation."},
		{name: "remove pseudo-header", m: &extprocv3.HeaderMutation{RemoveHeaders: []string{":path"}}, err: ErrDisallowedMutation, msg: "Invalid attempt to remove :path"},
		{name: "too many removes", m: &extprocv3.HeaderMutation{RemoveHeaders: many}, err: ErrInvalidMutation},
		{name: "result too large", m: setHeaders(rawSet("x-big", strings.Repeat("a", 61*1024))), err: ErrInvalidMutation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			h := base.Clone()
			rejected, err := cfg.applyHeaderMutation(&h, tc.m, tc.opts)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				if tc.msg != "" {
					var f *failure
					require.ErrorAs(t, err, &f)
					require.Equal(t, tc.msg, f.msg)
				}
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.rejected, rejected)
			want := tc.want
			if want == nil {
				want = base
			}
			require.Equal(t, want, h)
		})
	}
}

func TestValueChecks(t *testing.T) {
	cfg := DefaultConfig()
	cfg.AllowAllRouting = true
	cases := []struct {
		name, value string
		ok          bool
	}{
		{":status", "200", true},
		{":status", "199", false},
		{":status", "abc", false},
		{":authority", "api.example.com:443", true},
		{":authority", "", false},
		{":authority", "a:b", false},
		{"host", "x@y", false},
		{":scheme", "https", true},
		{":scheme", "ftp", false},
		{"x-any", "", true},
	}
	for _, tc := range cases {
		require.Equal(t, tc.ok, cfg.allowed(opSet, tc.name, tc.value), "%s=%q", tc.name, tc.value)
	}
	require.False(t, cfg.allowed(opRemove, "host", ""))
	require.False(t, cfg.allowed(opAppend, ":path", "/"))
}

// rawSet and setHeaders build mutations, as their namesakes of the external
// tests do.
func rawSet(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)}}
}

func setHeaders(opts ...*corev3.HeaderValueOption) *extprocv3.HeaderMutation {
	return &extprocv3.HeaderMutation{SetHeaders: opts}
}
