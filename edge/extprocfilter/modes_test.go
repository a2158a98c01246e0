package extprocfilter_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func okUpstream(*ForwardedRequest) *UpstreamResponse {
	return &UpstreamResponse{Status: 200, Headers: Headers{{"content-length", "2"}}, Chunks: [][]byte{[]byte("ok")}}
}

// overrideOn answers the messages for which on is true with CONTINUE plus a
// mode_override, the rest with CONTINUE.
func overrideOn(on func(*extprocv3.ProcessingRequest) bool, m *extprocfilterv3.ProcessingMode) handler {
	return func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		r := reply(req, nil)
		if on(req) {
			r.ModeOverride = m
		}
		return one(r), nil
	}
}

func TestModeOverride(t *testing.T) {
	streamed := streamedResponseOverride()
	cases := []struct {
		name  string
		cfg   func(*Config)
		h     handler
		kinds []string
		check func(t *testing.T, resp *Response)
	}{
		{
			name:  "honoured in the response_headers reply; content-length kept (R2.7)",
			h:     overrideOn(isResponseHeaders, streamed),
			kinds: []string{"request_headers", "request_body", "response_headers", "response_body", "response_body"},
			check: func(t *testing.T, resp *Response) {
				require.Equal(t, "2", resp.Headers.Value("content-length"))
				require.Equal(t, "ok", string(resp.Body))
			},
		},
		{
			name:  "ignored when allow_mode_override is false",
			cfg:   func(c *Config) { c.AllowModeOverride = false },
			h:     overrideOn(isResponseHeaders, streamed),
			kinds: []string{"request_headers", "request_body", "response_headers", "response_body"},
		},
		{
			name:  "ignored in a body reply",
			h:     overrideOn(isRequestBody, streamed),
			kinds: []string{"request_headers", "request_body", "response_headers", "response_body"},
		},
		{
			name: "dropped when not in allowed_override_modes",
			cfg: func(c *Config) {
				c.AllowedOverrideModes = []*extprocfilterv3.ProcessingMode{{
					RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED, ResponseHeaderMode: extprocfilterv3.ProcessingMode_SEND,
					ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED, ResponseTrailerMode: extprocfilterv3.ProcessingMode_SKIP,
				}}
			},
			h:     overrideOn(isResponseHeaders, streamed), // effective trailer mode is SEND, not SKIP
			kinds: []string{"request_headers", "request_body", "response_headers", "response_body"},
		},
		{
			name: "allowed_override_modes compares DEFAULT and SKIP as different values",
			cfg: func(c *Config) {
				c.AllowedOverrideModes = []*extprocfilterv3.ProcessingMode{{
					RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED, ResponseHeaderMode: extprocfilterv3.ProcessingMode_SEND,
					ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED, ResponseTrailerMode: extprocfilterv3.ProcessingMode_SEND,
				}}
			},
			h:     overrideOn(isResponseHeaders, streamed), // effective request trailer mode is SKIP, not DEFAULT
			kinds: []string{"request_headers", "request_body", "response_headers", "response_body"},
		},
		{
			name: "accepted when in allowed_override_modes",
			cfg: func(c *Config) {
				c.AllowedOverrideModes = []*extprocfilterv3.ProcessingMode{{
					RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED, RequestTrailerMode: extprocfilterv3.ProcessingMode_SKIP,
					ResponseHeaderMode: extprocfilterv3.ProcessingMode_SEND, ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
					ResponseTrailerMode: extprocfilterv3.ProcessingMode_SEND,
				}}
			},
			h:     overrideOn(isResponseHeaders, streamed),
			kinds: []string{"request_headers", "request_body", "response_headers", "response_body", "response_body"},
		},
		{
			name: "body modes are literal: unset request body mode means NONE",
			h: overrideOn(isRequestHeaders, &extprocfilterv3.ProcessingMode{
				ResponseBodyMode: extprocfilterv3.ProcessingMode_BUFFERED,
			}),
			kinds: []string{"request_headers", "response_headers", "response_body"},
			check: func(t *testing.T, resp *Response) {
				require.Equal(t, `{"model":"m"}`, string(resp.Forwarded.Body))
			},
		},
		{
			name: "header modes DEFAULT keep the filter's; SKIP switches off",
			h: overrideOn(isRequestHeaders, &extprocfilterv3.ProcessingMode{
				RequestBodyMode:    extprocfilterv3.ProcessingMode_BUFFERED,
				ResponseHeaderMode: extprocfilterv3.ProcessingMode_SKIP,
			}),
			kinds: []string{"request_headers", "request_body"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			fake := newFake(tc.h)
			resp := do(t, GRPC(Direct(fake)), cfg, postRequest(`{"model":"m"}`), func(*ForwardedRequest) *UpstreamResponse {
				return &UpstreamResponse{Status: 200, Headers: Headers{{"content-length", "2"}}, Chunks: [][]byte{[]byte("o"), []byte("k")}}
			})
			require.Nil(t, resp.LocalReply)
			require.Equal(t, tc.kinds, fake.kinds())
			require.Equal(t, "ok", string(resp.Body))
			if tc.check != nil {
				tc.check(t, resp)
			}
		})
	}
}

// TestContentLengthStripped: STREAMED, BUFFERED_PARTIAL and BUFFERED with
// header SKIP strip content-length when forwarding; the processor still sees
// it, and a content-length it sets is skipped (R2.10, R2.9.5).
func TestContentLengthStripped(t *testing.T) {
	cases := []struct {
		name  string
		mode  *extprocfilterv3.ProcessingMode
		allow bool
		want  bool
	}{
		{"streamed", &extprocfilterv3.ProcessingMode{RequestBodyMode: extprocfilterv3.ProcessingMode_STREAMED}, false, false},
		{"buffered partial", &extprocfilterv3.ProcessingMode{RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL}, false, false},
		{"buffered with header skip", &extprocfilterv3.ProcessingMode{RequestHeaderMode: extprocfilterv3.ProcessingMode_SKIP, RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED}, false, false},
		{"buffered", &extprocfilterv3.ProcessingMode{RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED}, false, true},
		{"streamed with allow_content_length_header", &extprocfilterv3.ProcessingMode{RequestBodyMode: extprocfilterv3.ProcessingMode_STREAMED}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet("content-length", "99"))})), nil
			})
			cfg := testConfig()
			cfg.Mode = tc.mode
			cfg.AllowContentLengthHeader = tc.allow
			resp := do(t, GRPC(Direct(fake)), cfg, postRequest(`{"model":"m"}`), okUpstream)
			require.Nil(t, resp.LocalReply)
			require.Equal(t, `{"model":"m"}`, string(resp.Forwarded.Body))
			_, has := resp.Forwarded.Headers.Get("content-length")
			require.Equal(t, tc.want, has)
			if tc.mode.GetRequestHeaderMode() != extprocfilterv3.ProcessingMode_SKIP {
				require.Equal(t, "13", HeadersFromProto(fake.received()[0].GetRequestHeaders().GetHeaders()).Value("content-length"))
			}
		})
	}
}

// TestContinueAndReplace (R2.3).
func TestContinueAndReplace(t *testing.T) {
	t.Run("with a body: replaces it, drops content-length, no body message", func(t *testing.T) {
		fake := newFake(onRequestHeaders(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
			return one(reply(req, &extprocv3.CommonResponse{
				Status:         extprocv3.CommonResponse_CONTINUE_AND_REPLACE,
				HeaderMutation: setHeaders(rawSet(":method", "PUT")), // allowed only here
				BodyMutation:   bodyMut("replaced"),
			}))
		}))
		resp := do(t, GRPC(Direct(fake)), testConfig(), postRequest(`{"model":"m"}`), okUpstream)
		require.Nil(t, resp.LocalReply)
		require.Equal(t, "replaced", string(resp.Forwarded.Body))
		require.Equal(t, "PUT", resp.Forwarded.Headers.Value(":method"))
		require.False(t, resp.Forwarded.Headers.Has("content-length"))
		require.Equal(t, []string{"request_headers", "response_headers", "response_body"}, fake.kinds())
	})
	t.Run("without a body: the original body passes unprocessed", func(t *testing.T) {
		fake := newFake(onRequestHeaders(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
			return one(reply(req, &extprocv3.CommonResponse{Status: extprocv3.CommonResponse_CONTINUE_AND_REPLACE}))
		}))
		resp := do(t, GRPC(Direct(fake)), testConfig(), postRequest(`{"model":`, `"m"}`), okUpstream)
		require.Nil(t, resp.LocalReply)
		require.Equal(t, `{"model":"m"}`, string(resp.Forwarded.Body))
		require.Equal(t, "13", resp.Forwarded.Headers.Value("content-length"))
		require.Equal(t, []string{"request_headers", "response_headers", "response_body"}, fake.kinds())
	})
	t.Run("ignored in a body reply", func(t *testing.T) {
		fake := newFake(onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
			return one(reply(req, &extprocv3.CommonResponse{
				Status:         extprocv3.CommonResponse_CONTINUE_AND_REPLACE,
				HeaderMutation: &extprocv3.HeaderMutation{RemoveHeaders: []string{"content-length"}},
				BodyMutation:   bodyMut("new"),
			}))
		}))
		resp := do(t, GRPC(Direct(fake)), testConfig(), postRequest(`{"model":"m"}`), okUpstream)
		require.Nil(t, resp.LocalReply)
		require.Equal(t, "new", string(resp.Forwarded.Body))
		require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body"}, fake.kinds())
	})
}

// TestClearRouteCache (R3.2).
func TestClearRouteCache(t *testing.T) {
	cases := []struct {
		name   string
		action extprocfilterv3.ExternalProcessor_RouteCacheAction
		cr     *extprocv3.CommonResponse
		want   bool
	}{
		{"with a header mutation", extprocfilterv3.ExternalProcessor_DEFAULT, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet("x-tollgate-route", "d")), ClearRouteCache: true}, true},
		{"with an empty header mutation", extprocfilterv3.ExternalProcessor_DEFAULT, &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{}, ClearRouteCache: true}, true},
		{"without a header mutation", extprocfilterv3.ExternalProcessor_DEFAULT, &extprocv3.CommonResponse{ClearRouteCache: true}, false},
		{"not asked", extprocfilterv3.ExternalProcessor_DEFAULT, &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{}}, false},
		{"CLEAR", extprocfilterv3.ExternalProcessor_CLEAR, &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{}}, true},
		{"RETAIN", extprocfilterv3.ExternalProcessor_RETAIN, &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{}, ClearRouteCache: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				return one(reply(req, tc.cr)), nil // also on the response side, where it has no effect
			})
			cfg := testConfig()
			cfg.RouteCacheAction = tc.action
			s := NewClient(GRPC(Direct(fake)), cfg).Start(testCtx(t))
			defer s.Close()
			r, err := s.RequestHeaders(postRequest("{}").Headers, false)
			require.NoError(t, err)
			require.Equal(t, tc.want, r.ClearRouteCache) // headers reply
			r, err = s.RequestBody([]byte("{}"), true)
			require.NoError(t, err)
			require.Equal(t, tc.want, r.ClearRouteCache) // body reply
			r, err = s.ResponseHeaders(Headers{{":status", "200"}}, true)
			require.NoError(t, err)
			require.False(t, r.ClearRouteCache)
		})
	}
}

// TestBufferLimits (R1.5b).
func TestBufferLimits(t *testing.T) {
	t.Run("request above the limit: 413", func(t *testing.T) {
		fake := newFake(continuer)
		cfg := testConfig()
		cfg.RequestBufferLimit = 8
		resp := do(t, GRPC(Direct(fake)), cfg, postRequest("12345", "67890"), okUpstream)
		wantLocal(413, "request_payload_too_large", ErrBufferLimit)(t, resp, fake)
		require.Equal(t, "Payload Too Large", string(resp.Body))
		require.Equal(t, []string{"request_headers"}, fake.kinds())
	})
	t.Run("buffered response above the limit: 500", func(t *testing.T) {
		fake := newFake(continuer)
		cfg := testConfig()
		cfg.ResponseBufferLimit = 8
		resp := do(t, GRPC(Direct(fake)), cfg, postRequest("{}"), sseUpstream("12345", "67890"))
		wantLocal(500, "response_payload_too_large", ErrBufferLimit)(t, resp, fake)
	})
	t.Run("streamed response is not limited", func(t *testing.T) {
		fake := newFake(overrideOn(isResponseHeaders, streamedResponseOverride()))
		cfg := testConfig()
		cfg.ResponseBufferLimit = 8
		resp := do(t, GRPC(Direct(fake)), cfg, postRequest("{}"), sseUpstream("12345", "67890"))
		require.Nil(t, resp.LocalReply)
		require.Equal(t, "1234567890", string(resp.Body))
	})
	t.Run("buffered response with header SKIP above the limit: reset", func(t *testing.T) {
		fake := newFake(continuer)
		cfg := testConfig()
		cfg.ResponseBufferLimit = 8
		cfg.Mode.ResponseHeaderMode = extprocfilterv3.ProcessingMode_SKIP
		resp := do(t, GRPC(Direct(fake)), cfg, postRequest("{}"), sseUpstream("12345", "67890"))
		require.True(t, resp.Reset)
		require.Equal(t, 200, resp.Status)
	})
}

// TestTrailers: the buffered body goes with end_of_stream=false when trailers
// end the message, then the trailers (R1.5b, R1.6); SKIP passes them.
func TestTrailers(t *testing.T) {
	fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		if req.GetResponseTrailers() != nil {
			return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet("x-usage", "7"))})), nil
		}
		return continuer(req)
	})
	req := postRequest(`{"model":"m"}`)
	req.Trailers = Headers{{"x-req-trailer", "1"}}
	resp := do(t, GRPC(Direct(fake)), testConfig(), req, func(*ForwardedRequest) *UpstreamResponse {
		return &UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte("a"), []byte("b")}, Trailers: Headers{{"grpc-status", "0"}}}
	})
	require.Nil(t, resp.LocalReply)
	require.Equal(t, Headers{{"x-req-trailer", "1"}}, resp.Forwarded.Trailers)
	require.Equal(t, Headers{{"grpc-status", "0"}, {"x-usage", "7"}}, resp.Trailers)
	require.Equal(t, "ab", string(resp.Body))
	require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body", "response_trailers"}, fake.kinds())
	got := fake.received()
	require.False(t, got[1].GetRequestBody().GetEndOfStream()) // request trailers (SKIP) end it
	require.False(t, got[3].GetResponseBody().GetEndOfStream())
	require.Equal(t, "ab", string(got[3].GetResponseBody().GetBody()))
}

// TestStreamClose covers R1.8: the close optimization and Close.
func TestStreamClose(t *testing.T) {
	noResponse := &extprocfilterv3.ProcessingMode{
		RequestHeaderMode:  extprocfilterv3.ProcessingMode_SEND,
		ResponseHeaderMode: extprocfilterv3.ProcessingMode_SKIP,
	}
	for _, optimize := range []bool{true, false} {
		t.Run("optimization="+map[bool]string{true: "on", false: "off"}[optimize], func(t *testing.T) {
			forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
				fake := newFake(continuer)
				cfg := testConfig()
				cfg.Mode = noResponse
				cfg.StreamCloseOptimization = optimize
				s := NewClient(connect(fake), cfg).Start(testCtx(t))
				r, err := s.RequestHeaders(getRequest().Headers, true)
				require.NoError(t, err)
				require.True(t, r.Continue)
				if optimize {
					// R1.8a: closed right after the last expected reply.
					require.Eventually(t, func() bool { return len(fake.endings()) == 1 }, 5*time.Second, time.Millisecond)
				} else {
					time.Sleep(20 * time.Millisecond)
					require.Empty(t, fake.endings())
				}
				r, err = s.ResponseHeaders(Headers{{":status", "200"}}, true)
				require.NoError(t, err)
				require.True(t, r.Continue)
				s.Close()
				require.Eventually(t, func() bool { return len(fake.endings()) == 1 }, 5*time.Second, time.Millisecond)
				end := fake.endings()[0]
				require.True(t, errors.Is(end, io.EOF) || status.Code(end) == codes.Canceled, "server saw %v", end)
				require.Equal(t, []string{"request_headers"}, fake.kinds())
				_, err = s.ResponseBody(nil, true)
				require.ErrorIs(t, err, ErrFinished)
			})
		})
	}
}

// TestContextCancel: the HTTP stream reset while waiting for a reply.
func TestContextCancel(t *testing.T) {
	fake := newFake(func(*extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) { return nil, nil })
	ctx, cancel := context.WithCancel(testCtx(t))
	s := NewClient(GRPC(Direct(fake)), testConfig()).Start(ctx)
	defer s.Close()
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err := s.RequestHeaders(getRequest().Headers, true)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.ResponseHeaders(Headers{{":status", "200"}}, true)
	require.Error(t, err)
}

// failingClient cannot open streams.
type failingClient struct{}

func (failingClient) Process(context.Context, ...grpc.CallOption) (extprocv3.ExternalProcessor_ProcessClient, error) {
	return nil, status.Error(codes.Unavailable, "no route")
}

// TestOpenFailure: the stream cannot open (§4).
func TestOpenFailure(t *testing.T) {
	resp := do(t, GRPC(failingClient{}), testConfig(), getRequest(), okUpstream)
	wantLocal(500, "ext_proc_error_gRPC_error_14{no_route}", ErrGRPC)(t, resp, nil)

	cfg := testConfig()
	cfg.FailureModeAllow = true
	resp = do(t, GRPC(failingClient{}), cfg, getRequest(), okUpstream)
	require.Nil(t, resp.LocalReply)
	require.Equal(t, getRequest().Headers, resp.Forwarded.Headers)
	require.Equal(t, "ok", string(resp.Body))
	require.ErrorIs(t, resp.Failures[0], ErrGRPC)
}

// TestLazyOpen: no stream when nothing is sent (R1.1); the first message is
// response_headers when the request side is off.
func TestLazyOpen(t *testing.T) {
	cfg := testConfig()
	cfg.Mode = &extprocfilterv3.ProcessingMode{RequestHeaderMode: extprocfilterv3.ProcessingMode_SKIP, ResponseHeaderMode: extprocfilterv3.ProcessingMode_SKIP}
	resp := do(t, GRPC(failingClient{}), cfg, postRequest("{}"), okUpstream)
	require.Nil(t, resp.LocalReply)

	fake := newFake(continuer)
	cfg.Mode = &extprocfilterv3.ProcessingMode{RequestHeaderMode: extprocfilterv3.ProcessingMode_SKIP}
	resp = do(t, GRPC(Direct(fake)), cfg, postRequest("{}"), okUpstream)
	require.Nil(t, resp.LocalReply)
	require.Equal(t, []string{"response_headers"}, fake.kinds())
	require.NotNil(t, fake.received()[0].GetProtocolConfig())
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, DefaultConfig().Validate())
	bad := []func(*Config){
		func(c *Config) { c.Mode.ResponseBodyMode = extprocfilterv3.ProcessingMode_FULL_DUPLEX_STREAMED },
		func(c *Config) { c.MessageTimeout = -1 },
		func(c *Config) { c.RequestBufferLimit = 0 },
		func(c *Config) { c.StatusOnError = 99 },
	}
	for i, mut := range bad {
		c := DefaultConfig()
		mut(&c)
		require.Error(t, c.Validate(), "case %d", i)
		_, err := NewClient(GRPC(Direct(newFake(continuer))), c).Start(testCtx(t)).RequestHeaders(getRequest().Headers, true)
		require.Error(t, err, "case %d", i)
	}
}

// TestBufferedPartial (R1.5d): the body up to the limit goes in one message
// (end_of_stream=false when the limit was hit), the headers are held until
// its reply, the rest flows unprocessed.
func TestBufferedPartial(t *testing.T) {
	cases := []struct {
		name   string
		chunks []string
		sent   string
		eos    bool
		want   string
	}{
		{"limit hit", []string{"ab", "cd", "ef"}, "abcd", false, "<abcd>ef"},
		{"end before the limit", []string{"a", "b"}, "ab", true, "<ab>"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				if isRequestBody(req) {
					return one(reply(req, &extprocv3.CommonResponse{
						HeaderMutation: setHeaders(rawSet("x-seen", "1")),
						BodyMutation:   bodyMut("<" + string(req.GetRequestBody().GetBody()) + ">"),
					})), nil
				}
				return continuer(req)
			})
			cfg := testConfig()
			cfg.Mode = &extprocfilterv3.ProcessingMode{RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED_PARTIAL}
			cfg.RequestBufferLimit = 4
			resp := do(t, GRPC(Direct(fake)), cfg, postRequest(tc.chunks...), okUpstream)
			require.Nil(t, resp.LocalReply)
			require.Equal(t, tc.want, string(resp.Forwarded.Body))
			require.Equal(t, "1", resp.Forwarded.Headers.Value("x-seen")) // headers were held
			require.False(t, resp.Forwarded.Headers.Has("content-length"))
			got := fake.received()
			require.Equal(t, []string{"request_headers", "request_body", "response_headers"}, fake.kinds())
			require.Equal(t, tc.sent, string(got[1].GetRequestBody().GetBody()))
			require.Equal(t, tc.eos, got[1].GetRequestBody().GetEndOfStream())
		})
	}
}

// TestStreamedTimeoutWhileIdle: an expired timer of an outstanding chunk is
// noticed on the next body call even when it does not need to wait.
func TestStreamedTimeoutWhileIdle(t *testing.T) {
	fake := newFake(streamingOverride(func(*extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		return nil, nil
	}))
	cfg := testConfig()
	cfg.MessageTimeout = 100 * time.Millisecond
	cfg.MaxOutstandingChunks = 8
	s := NewClient(GRPC(Direct(fake)), cfg).Start(testCtx(t))
	defer s.Close()
	_, err := s.RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	r, err := s.ResponseHeaders(Headers{{":status", "200"}}, false)
	require.NoError(t, err)
	require.True(t, r.Continue)
	r, err = s.ResponseBody([]byte("a"), false)
	require.NoError(t, err)
	require.Nil(t, r.LocalReply)
	time.Sleep(200 * time.Millisecond)
	r, err = s.ResponseBody([]byte("b"), false)
	require.NoError(t, err)
	require.True(t, r.Reset)
	require.ErrorIs(t, r.Failure, ErrMessageTimeout)
}

// TestStreamedBodyMutations: per-chunk body mutations (R2.5) — clear_body and
// body "" drop the chunk, clear_body=false and no mutation keep it — and
// header_mutation ignored in STREAMED body replies (R2.4).
func TestStreamedBodyMutations(t *testing.T) {
	muts := []*extprocv3.CommonResponse{
		{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: true}}},
		{BodyMutation: bodyMut("")},
		{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: false}}},
		{HeaderMutation: setHeaders(rawSet("x-late", "1"))},
		{BodyMutation: bodyMut("E")},
	}
	n := 0
	fake := newFake(streamingOverride(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		cr := muts[n]
		n++
		return one(reply(req, cr)), nil
	}))
	s := NewClient(GRPC(Direct(fake)), testConfig()).Start(testCtx(t))
	defer s.Close()
	_, err := s.RequestHeaders(getRequest().Headers, true)
	require.NoError(t, err)
	r, err := s.ResponseHeaders(Headers{{":status", "200"}}, false)
	require.NoError(t, err)
	require.False(t, r.Headers.Has("x-late"))
	var got []string
	for i, c := range []string{"a", "b", "c", "d", "e"} {
		r, err := s.ResponseBody([]byte(c), i == 4)
		require.NoError(t, err)
		require.True(t, r.Continue)
		require.Nil(t, r.Headers) // the headers went earlier; x-late is never applied
		got = append(got, string(r.Body))
	}
	require.Equal(t, []string{"", "", "c", "d", "E"}, got)
}

// TestRequestTrailersSent: with request_trailer_mode SEND the trailers go to
// the processor after the body reply and its mutation applies to them (R1.6).
func TestRequestTrailersSent(t *testing.T) {
	fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		if req.GetRequestTrailers() != nil {
			return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{
				SetHeaders: []*corev3.HeaderValueOption{rawSet("x-checksum", "ok")}, RemoveHeaders: []string{"x-drop"},
			}})), nil
		}
		return continuer(req)
	})
	cfg := testConfig()
	cfg.Mode.RequestTrailerMode = extprocfilterv3.ProcessingMode_SEND
	req := postRequest("a", "b")
	req.Trailers = Headers{{"x-drop", "1"}}
	resp := do(t, GRPC(Direct(fake)), cfg, req, okUpstream)
	require.Nil(t, resp.LocalReply)
	require.Equal(t, Headers{{"x-checksum", "ok"}}, resp.Forwarded.Trailers)
	require.Equal(t, "ab", string(resp.Forwarded.Body))
	require.Equal(t, []string{"request_headers", "request_body", "request_trailers", "response_headers", "response_body"}, fake.kinds())

	// A trailers reply where none is expected is spurious.
	fake = newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		if isRequestBody(req) {
			return one(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}}), nil
		}
		return continuer(req)
	})
	resp = do(t, GRPC(Direct(fake)), cfg, req, okUpstream)
	wantLocal(500, "spurious_message", ErrSpurious)(t, resp, fake)
}

// TestConcurrentStreams: one Client serves many requests at once, each on its
// own gRPC stream (R1.1).
func TestConcurrentStreams(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			if isRequestBody(req) {
				b := req.GetRequestBody().GetBody()
				return one(reply(req, &extprocv3.CommonResponse{
					HeaderMutation: setHeaders(rawSet("x-tollgate-route", string(b))),
				})), nil
			}
			return continuer(req)
		})
		c := NewClient(connect(fake), testConfig())
		const n = 32
		errs := make(chan error, n)
		for i := range n {
			go func() {
				body := "req-" + itoa(i)
				resp, err := Do(testCtx(t), c, postRequest(body), func(f *ForwardedRequest) *UpstreamResponse {
					return &UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte(f.Headers.Value("x-tollgate-route"))}}
				})
				switch {
				case err != nil:
					errs <- err
				case string(resp.Body) != body:
					errs <- fmt.Errorf("request %d got %q", i, resp.Body)
				default:
					errs <- nil
				}
			}()
		}
		for range n {
			require.NoError(t, <-errs)
		}
		require.Len(t, fake.received(), 4*n)
	})
}

// TestCloseWhileWaiting: Close from another goroutine resets a call that
// waits for a processor that never answers.
func TestCloseWhileWaiting(t *testing.T) {
	fake := newFake(func(*extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) { return nil, nil })
	s := NewClient(GRPC(Direct(fake)), testConfig()).Start(testCtx(t))
	time.AfterFunc(20*time.Millisecond, s.Close)
	start := time.Now()
	_, err := s.RequestHeaders(getRequest().Headers, true)
	require.ErrorIs(t, err, context.Canceled)
	require.Less(t, time.Since(start), time.Second)
	s.Close()
	require.Eventually(t, func() bool { return len(fake.endings()) == 1 }, 5*time.Second, time.Millisecond)
}

// TestDirectionsInterleave: the two directions share the stream; a reply is
// matched to its direction by type, so response_headers can be processed
// while a STREAMED request chunk is still outstanding (R1.3).
func TestDirectionsInterleave(t *testing.T) {
	var held *extprocv3.ProcessingRequest
	fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		switch {
		case isRequestBody(req) && held == nil:
			held = req // answered after the response headers
			return nil, nil
		case isResponseHeaders(req):
			return []*extprocv3.ProcessingResponse{
				reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet("x-r", "1"))}),
				reply(held, &extprocv3.CommonResponse{BodyMutation: bodyMut("A")}),
			}, nil
		}
		return continuer(req)
	})
	cfg := testConfig()
	cfg.MaxOutstandingChunks = 4
	// Envoy's close optimization looks at the response direction only on a
	// response_headers reply, and with no response body processing it would
	// close the stream under the outstanding request chunk.
	cfg.StreamCloseOptimization = false
	s := NewClient(GRPC(Direct(fake)), cfg).Start(testCtx(t), WithRouteMode(&extprocfilterv3.ProcessingMode{
		RequestBodyMode:  extprocfilterv3.ProcessingMode_STREAMED,
		ResponseBodyMode: extprocfilterv3.ProcessingMode_NONE,
	}))
	defer s.Close()
	_, err := s.RequestHeaders(postRequest().Headers, false)
	require.NoError(t, err)
	r, err := s.RequestBody([]byte("a"), false)
	require.NoError(t, err)
	require.Empty(t, r.Body) // outstanding
	r, err = s.ResponseHeaders(Headers{{":status", "200"}}, false)
	require.NoError(t, err)
	require.Equal(t, "1", r.Headers.Value("x-r"))
	r, err = s.RequestBody([]byte("b"), true)
	require.NoError(t, err)
	require.Equal(t, "Ab", string(r.Body))
	r, err = s.ResponseBody([]byte("ok"), true)
	require.NoError(t, err)
	require.Equal(t, "ok", string(r.Body))
}

// TestContinueWhileBuffering: with header SKIP and a BUFFERED body the headers
// go on at once (R1.7) but the body is held until its reply.
func TestContinueWhileBuffering(t *testing.T) {
	fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		return one(reply(req, &extprocv3.CommonResponse{BodyMutation: bodyMut("B")})), nil
	})
	cfg := testConfig()
	cfg.Mode = &extprocfilterv3.ProcessingMode{RequestHeaderMode: extprocfilterv3.ProcessingMode_SKIP, RequestBodyMode: extprocfilterv3.ProcessingMode_BUFFERED}
	s := NewClient(GRPC(Direct(fake)), cfg).Start(testCtx(t))
	defer s.Close()
	r, err := s.RequestHeaders(postRequest("ab").Headers, false)
	require.NoError(t, err)
	require.True(t, r.Continue)
	require.False(t, r.Headers.Has("content-length")) // R2.10
	r, err = s.RequestBody([]byte("a"), false)
	require.NoError(t, err)
	require.False(t, r.Continue)
	require.Empty(t, r.Body)
	r, err = s.RequestBody([]byte("b"), true)
	require.NoError(t, err)
	require.True(t, r.Continue)
	require.Nil(t, r.Headers)
	require.Equal(t, "B", string(r.Body))
	require.Equal(t, []string{"request_body"}, fake.kinds())
}
