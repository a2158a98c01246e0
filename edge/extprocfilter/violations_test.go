package extprocfilter_test

import (
	"bytes"
	"testing"
	"time"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// onRequestHeaders answers request headers with r and everything else with
// CONTINUE.
func onRequestHeaders(r func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse) handler {
	return func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		if isRequestHeaders(req) {
			return r(req), nil
		}
		return continuer(req)
	}
}

// onRequestBody answers the request body with r and everything else with
// CONTINUE.
func onRequestBody(r func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse) handler {
	return func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		if isRequestBody(req) {
			return r(req), nil
		}
		return continuer(req)
	}
}

// failOnRequestBody ends the stream with err when the request body arrives.
func failOnRequestBody(err error) handler {
	return func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		if isRequestBody(req) {
			return nil, err
		}
		return continuer(req)
	}
}

func bodyReplyFor(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}}
}

// streamingOverride answers response headers with the §6 STREAMED override.
func streamingOverride(body func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error)) handler {
	return func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		switch {
		case isResponseHeaders(req):
			r := reply(req, &extprocv3.CommonResponse{HeaderMutation: &extprocv3.HeaderMutation{RemoveHeaders: []string{"content-length"}}})
			r.ModeOverride = streamedResponseOverride()
			return one(r), nil
		case isResponseBody(req):
			return body(req)
		}
		return continuer(req)
	}
}

func sseUpstream(chunks ...string) Upstream {
	return func(*ForwardedRequest) *UpstreamResponse {
		up := &UpstreamResponse{Status: 200, Headers: Headers{{"content-type", "text/event-stream"}}}
		for _, c := range chunks {
			up.Chunks = append(up.Chunks, []byte(c))
		}
		return up
	}
}

// wantLocal asserts a local reply with status, details and failure kind.
func wantLocal(status int, det string, kind error) func(t *testing.T, resp *Response, f *fakeProcessor) {
	return func(t *testing.T, resp *Response, _ *fakeProcessor) {
		t.Helper()
		require.NotNil(t, resp.LocalReply)
		require.False(t, resp.Reset)
		require.Equal(t, status, resp.LocalReply.Status)
		require.Equal(t, status, resp.Status)
		require.Equal(t, det, resp.LocalReply.Details)
		if kind != nil {
			require.NotEmpty(t, resp.Failures)
			require.ErrorIs(t, resp.Failures[len(resp.Failures)-1], kind)
		}
	}
}

// wantUnmodified asserts the request went upstream unmodified and the
// response came back, with a failure of kind reported.
func wantUnmodified(kind error) func(t *testing.T, resp *Response, f *fakeProcessor) {
	return func(t *testing.T, resp *Response, _ *fakeProcessor) {
		t.Helper()
		require.Nil(t, resp.LocalReply)
		require.NotNil(t, resp.Forwarded)
		require.Equal(t, postRequest(`{"model":"m"}`).Headers, resp.Forwarded.Headers)
		require.Equal(t, `{"model":"m"}`, string(resp.Forwarded.Body))
		require.Equal(t, 200, resp.Status)
		require.Equal(t, "ok", string(resp.Body))
		require.NotEmpty(t, resp.Failures)
		require.ErrorIs(t, resp.Failures[0], kind)
	}
}

type violationCase struct {
	name   string
	cfg    func(c *Config)
	handle handler
	delay  func(req *extprocv3.ProcessingRequest, i int) time.Duration
	req    *Request
	up     Upstream
	check  func(t *testing.T, resp *Response, f *fakeProcessor)
}

func violationCases() []violationCase {
	return []violationCase{
		{
			name:   "spurious: body reply before the headers reply",
			handle: onRequestHeaders(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse { return one(bodyReplyFor(req)) }),
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				wantLocal(500, "spurious_message", ErrSpurious)(t, resp, f)
				require.Nil(t, resp.Forwarded)
				require.Empty(t, resp.LocalReply.Body)
			},
		},
		{
			name: "spurious: response_headers reply to request_headers",
			handle: onRequestHeaders(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(&extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}})
			}),
			check: wantLocal(500, "spurious_message", ErrSpurious),
		},
		{
			name: "spurious: an extra body reply",
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return []*extprocv3.ProcessingResponse{reply(req, nil), reply(req, nil)}
			}),
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				wantLocal(500, "spurious_message", ErrSpurious)(t, resp, f)
				require.NotNil(t, resp.Forwarded) // caught at the next event
			},
		},
		{
			name: "spurious: no oneof",
			handle: onRequestHeaders(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(&extprocv3.ProcessingResponse{})
			}),
			check: wantLocal(500, "unhandled_message", ErrSpurious),
		},
		{
			name:   "spurious with status_on_error",
			cfg:    func(c *Config) { c.StatusOnError = 502 },
			handle: onRequestHeaders(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse { return one(bodyReplyFor(req)) }),
			check:  wantLocal(502, "spurious_message", ErrSpurious),
		},
		{
			name:   "spurious ignored before 1.35 (toggle off)",
			cfg:    func(c *Config) { c.SpuriousFailsClosed = false },
			handle: onRequestHeaders(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse { return one(bodyReplyFor(req)) }),
			check:  wantUnmodified(ErrSpurious),
		},
		{
			name:   "spurious with failure_mode_allow",
			cfg:    func(c *Config) { c.FailureModeAllow = true },
			handle: onRequestHeaders(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse { return one(bodyReplyFor(req)) }),
			check:  wantUnmodified(ErrSpurious),
		},
		{
			name: "spurious: streamed_response outside FULL_DUPLEX_STREAMED resets a started response",
			handle: streamingOverride(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				return one(reply(req, &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_StreamedResponse{
					StreamedResponse: &extprocv3.StreamedBodyResponse{Body: []byte("x"), EndOfStream: true},
				}}})), nil
			}),
			up: sseUpstream("data: a\n\n"),
			check: func(t *testing.T, resp *Response, _ *fakeProcessor) {
				require.True(t, resp.Reset)
				require.Equal(t, 200, resp.Status)
				require.NotNil(t, resp.LocalReply)
				require.Equal(t, 500, resp.LocalReply.Status)
				require.ErrorIs(t, resp.Failures[0], ErrSpurious)
			},
		},
		{
			name: "value instead of raw_value sets an empty header",
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(
					&corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-tollgate-route", Value: "dep-1"}},
				)}))
			}),
			check: func(t *testing.T, resp *Response, _ *fakeProcessor) {
				require.Nil(t, resp.LocalReply)
				v, ok := resp.Forwarded.Headers.Get("x-tollgate-route")
				require.True(t, ok)
				require.Empty(t, v)
			},
		},
		{
			name: "value and raw_value both set",
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(
					&corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-tollgate-route", Value: "dep-1", RawValue: []byte("dep-1")}},
				)}))
			}),
			check: wantLocal(500, "Only_one_of_value_or_raw_value_in_the_HeaderValue_message_should_be_set.", ErrInvalidMutation),
		},
		{
			name: "content-length mismatch after a body rewrite",
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(reply(req, &extprocv3.CommonResponse{BodyMutation: bodyMut(`{"model":"longer-name"}`)}))
			}),
			check: wantLocal(500, "mismatch_between_content_length_and_the_length_of_the_mutated_body", ErrContentLengthMismatch),
		},
		{
			name: "content-length mismatch with clear_body",
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(reply(req, &extprocv3.CommonResponse{BodyMutation: &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_ClearBody{ClearBody: true}}}))
			}),
			check: wantLocal(500, "mismatch_between_content_length_and_the_length_of_the_mutated_body", ErrContentLengthMismatch),
		},
		{
			name: "content-length mismatch is an error even with failure_mode_allow",
			cfg:  func(c *Config) { c.FailureModeAllow = true },
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(reply(req, &extprocv3.CommonResponse{BodyMutation: bodyMut("{}")}))
			}),
			check: wantLocal(500, "mismatch_between_content_length_and_the_length_of_the_mutated_body", ErrContentLengthMismatch),
		},
		{
			name: "content-length removed with the rewrite",
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(reply(req, &extprocv3.CommonResponse{
					HeaderMutation: &extprocv3.HeaderMutation{RemoveHeaders: []string{"content-length"}},
					BodyMutation:   bodyMut(`{"model":"longer-name"}`),
				}))
			}),
			check: func(t *testing.T, resp *Response, _ *fakeProcessor) {
				require.Nil(t, resp.LocalReply)
				require.False(t, resp.Forwarded.Headers.Has("content-length"))
				require.Equal(t, `{"model":"longer-name"}`, string(resp.Forwarded.Body))
			},
		},
		{
			name:   "never replying: 504",
			cfg:    func(c *Config) { c.MessageTimeout = 50 * time.Millisecond },
			handle: onRequestBody(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse { return nil }),
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				wantLocal(504, "ext_proc_error_per-message_timeout_exceeded", ErrMessageTimeout)(t, resp, f)
				require.Nil(t, resp.Forwarded)
			},
		},
		{
			name: "never replying with failure_mode_allow: continue unmodified",
			cfg: func(c *Config) {
				c.MessageTimeout = 50 * time.Millisecond
				c.FailureModeAllow = true
			},
			handle: onRequestBody(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse { return nil }),
			check:  wantUnmodified(ErrMessageTimeout),
		},
		{
			name: "override_message_timeout extends the timer once",
			cfg:  func(c *Config) { c.MessageTimeout = 200 * time.Millisecond },
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return []*extprocv3.ProcessingResponse{
					{OverrideMessageTimeout: durationpb.New(2 * time.Second)},
					// Fields other than the override are ignored (R2.2): this
					// is not an immediate response.
					{OverrideMessageTimeout: durationpb.New(time.Millisecond), Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{}}},
					reply(req, nil),
				}
			}),
			delay: func(req *extprocv3.ProcessingRequest, i int) time.Duration {
				if isRequestBody(req) && i == 2 {
					return 500 * time.Millisecond
				}
				return 0
			},
			check: func(t *testing.T, resp *Response, _ *fakeProcessor) {
				require.Nil(t, resp.LocalReply)
				require.Equal(t, `{"model":"m"}`, string(resp.Forwarded.Body))
			},
		},
		{
			name: "override_message_timeout above max_message_timeout is ignored",
			cfg: func(c *Config) {
				c.MessageTimeout = 100 * time.Millisecond
				c.MaxMessageTimeout = time.Second
			},
			handle: onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return []*extprocv3.ProcessingResponse{{OverrideMessageTimeout: durationpb.New(2 * time.Second)}, reply(req, nil)}
			}),
			delay: func(req *extprocv3.ProcessingRequest, i int) time.Duration {
				if isRequestBody(req) && i == 1 {
					return 400 * time.Millisecond
				}
				return 0
			},
			check: wantLocal(504, "ext_proc_error_per-message_timeout_exceeded", ErrMessageTimeout),
		},
		{
			name: "immediate response",
			handle: onRequestHeaders(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(immediate(typev3.StatusCode_Unauthorized, `{"error":{}}`, "invalid api key", setHeaders(rawSet("content-type", "application/json"))))
			}),
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				wantLocal(401, "invalid_api_key", nil)(t, resp, f)
				require.Empty(t, resp.Failures)
				require.Nil(t, resp.Forwarded)
				require.Equal(t, `{"error":{}}`, string(resp.Body))
				require.Equal(t, Headers{{":status", "401"}, {"content-length", "12"}, {"content-type", "application/json"}}, resp.Headers)
				require.Equal(t, []string{"request_headers"}, f.kinds())
			},
		},
		{
			name: "immediate response below 200 becomes 200",
			handle: onRequestBody(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(immediate(typev3.StatusCode_Continue, "", "", nil))
			}),
			check: wantLocal(200, "", nil),
		},
		{
			name: "immediate response headers obey the mutation rules",
			handle: onRequestHeaders(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(immediate(typev3.StatusCode_TooManyRequests, "", "", setHeaders(rawSet("retry-after", "1"), rawSet("x-envoy-ratelimited", "true"))))
			}),
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				wantLocal(429, "", nil)(t, resp, f)
				require.Equal(t, "1", resp.Headers.Value("retry-after"))
				require.False(t, resp.Headers.Has("x-envoy-ratelimited"))
			},
		},
		{
			name: "immediate response after the response started: reset",
			handle: streamingOverride(func(*extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				return one(immediate(typev3.StatusCode_PaymentRequired, "budget", "", nil)), nil
			}),
			up: sseUpstream("data: a\n\n", "data: b\n\n"),
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				require.True(t, resp.Reset)
				require.Equal(t, 200, resp.Status)
				require.Equal(t, 402, resp.LocalReply.Status)
				require.Empty(t, resp.Body)
				require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body"}, f.kinds())
			},
		},
		{
			name: "immediate response to response_headers is a local reply, not a reset",
			handle: func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				if isResponseHeaders(req) {
					return one(immediate(typev3.StatusCode_BadGateway, `{"error":"upstream"}`, "upstream error", nil)), nil
				}
				return continuer(req)
			},
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				wantLocal(502, "upstream_error", nil)(t, resp, f)
				require.NotNil(t, resp.Forwarded)
				require.Equal(t, `{"error":"upstream"}`, string(resp.Body))
				require.Equal(t, "text/plain", resp.Headers.Value("content-type"))
			},
		},
		{
			name: "immediate response with disable_immediate_response is spurious",
			cfg:  func(c *Config) { c.DisableImmediateResponse = true },
			handle: onRequestHeaders(func(*extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
				return one(immediate(typev3.StatusCode_Forbidden, "no", "", nil))
			}),
			check: wantLocal(500, "unhandled_immediate_response_due_to_config_disabled_it", ErrSpurious),
		},
		{
			name:   "gRPC error: status_on_error",
			handle: failOnRequestBody(status.Error(codes.Unavailable, "store down")),
			check:  wantLocal(500, "ext_proc_error_gRPC_error_14{store_down}", ErrGRPC),
		},
		{
			name:   "gRPC error with failure_mode_allow",
			cfg:    func(c *Config) { c.FailureModeAllow = true },
			handle: failOnRequestBody(status.Error(codes.Unavailable, "store down")),
			check:  wantUnmodified(ErrGRPC),
		},
		{
			name: "server closes with OK: continue without the processor",
			handle: func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				if isRequestBody(req) {
					return nil, errCloseOK
				}
				return continuer(req)
			},
			check: func(t *testing.T, resp *Response, f *fakeProcessor) {
				wantUnmodified(ErrProcessorClosed)(t, resp, f)
				require.Equal(t, []string{"request_headers", "request_body"}, f.kinds())
			},
		},
	}
}

func TestViolations(t *testing.T) {
	for _, tc := range violationCases() {
		t.Run(tc.name, func(t *testing.T) {
			forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
				cfg := testConfig()
				if tc.cfg != nil {
					tc.cfg(&cfg)
				}
				fake := newFake(tc.handle)
				fake.delay = tc.delay
				req := tc.req
				if req == nil {
					req = postRequest(`{"model":"m"}`)
				}
				up := tc.up
				if up == nil {
					up = func(*ForwardedRequest) *UpstreamResponse {
						return &UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte("ok")}}
					}
				}
				tc.check(t, do(t, connect(fake), cfg, req, up), fake)
			})
		})
	}
}

// TestDeniedHeaders: each header the default mutation rules deny (R2.9.6-7),
// as an error with disallow_is_error and ignored without it.
func TestDeniedHeaders(t *testing.T) {
	cases := []struct {
		name   string
		mut    *extprocv3.HeaderMutation
		detail string
	}{
		{"host", setHeaders(rawSet("host", "evil.example")), "Invalid_attempt_to_modify_host"},
		{":authority", setHeaders(rawSet(":authority", "evil.example")), "Invalid_attempt_to_modify_:authority"},
		{":method", setHeaders(rawSet(":method", "DELETE")), "Invalid_attempt_to_modify_:method"},
		{":scheme", setHeaders(rawSet(":scheme", "https")), "Invalid_attempt_to_modify_:scheme"},
		{"x-envoy-*", setHeaders(rawSet("x-envoy-upstream-rq-timeout-ms", "1")), "Invalid_attempt_to_modify_x-envoy-upstream-rq-timeout-ms"},
		{"remove :path", &extprocv3.HeaderMutation{RemoveHeaders: []string{":path"}}, "Invalid_attempt_to_remove_:path"},
		{"remove host", &extprocv3.HeaderMutation{RemoveHeaders: []string{"host"}}, "Invalid_attempt_to_remove_host"},
		{"append to :path", setHeaders(&corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: ":path", RawValue: []byte("/x")}, Append: wrapperspb.Bool(true)}), "Invalid_attempt_to_modify_:path"},
		{":status below 200", setHeaders(rawSet(":status", "100")), "Invalid_attempt_to_modify_:status"},
	}
	for _, tc := range cases {
		for _, isError := range []bool{true, false} {
			name := tc.name + "/ignored"
			if isError {
				name = tc.name + "/error"
			}
			t.Run(name, func(t *testing.T) {
				fake := newFake(onRequestBody(func(req *extprocv3.ProcessingRequest) []*extprocv3.ProcessingResponse {
					// :status only exists on responses; set it there.
					return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: tc.mut}))
				}))
				if tc.name == ":status below 200" {
					fake = newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
						if isResponseHeaders(req) {
							return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: tc.mut})), nil
						}
						return continuer(req)
					})
				}
				cfg := testConfig()
				cfg.DisallowIsError = isError
				req := postRequest(`{"model":"m"}`)
				req.Headers = append(req.Headers, Header{"host", "gw.local"})
				resp := do(t, GRPC(Direct(fake)), cfg, req, func(*ForwardedRequest) *UpstreamResponse {
					return &UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte("ok")}}
				})
				if isError {
					wantLocal(500, tc.detail, ErrDisallowedMutation)(t, resp, fake)
					return
				}
				require.Nil(t, resp.LocalReply)
				require.Equal(t, req.Headers, resp.Forwarded.Headers)
				require.Equal(t, 200, resp.Status)
			})
		}
	}
}

// TestAllowedHeaders: :path, :status and ordinary headers may be changed
// (R2.9.6); append adds a value, default overwrites (R2.9.4); append_action
// is ignored.
func TestAllowedHeaders(t *testing.T) {
	fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		switch {
		case isRequestBody(req):
			return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(
				rawSet(":path", "/v2"),
				rawSet("content-type", "text/plain"),
				&corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-tag", RawValue: []byte("b")}, Append: wrapperspb.Bool(true)},
				&corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: "x-one", RawValue: []byte("2")}, AppendAction: corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD},
			)})), nil
		case isResponseHeaders(req):
			return one(reply(req, &extprocv3.CommonResponse{HeaderMutation: setHeaders(rawSet(":status", "429"))})), nil
		}
		return continuer(req)
	})
	req := postRequest(`{"model":"m"}`)
	req.Headers = append(req.Headers, Header{"x-tag", "a"}, Header{"x-one", "1"})
	resp := do(t, GRPC(Direct(fake)), testConfig(), req, ok200("{}"))
	require.Nil(t, resp.LocalReply)
	require.Equal(t, "/v2", resp.Forwarded.Headers.Value(":path"))
	require.Equal(t, "text/plain", resp.Forwarded.Headers.Value("content-type"))
	require.Equal(t, []string{"a", "b"}, resp.Forwarded.Headers.Values("x-tag"))
	require.Equal(t, []string{"2"}, resp.Forwarded.Headers.Values("x-one"))
	require.Equal(t, 429, resp.Status)
}

// TestStreamedChunksOutstanding: with several chunks outstanding the replies
// are matched to chunks in FIFO order (R1.5c). The processor holds its replies
// until it has three chunks, so a client that waited after each chunk would
// time out.
func TestStreamedChunksOutstanding(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		var pending []*extprocv3.ProcessingRequest
		fake := newFake(streamingOverride(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			pending = append(pending, req)
			if len(pending) < 3 && !req.GetResponseBody().GetEndOfStream() {
				return nil, nil
			}
			var out []*extprocv3.ProcessingResponse
			for _, p := range pending {
				out = append(out, reply(p, &extprocv3.CommonResponse{BodyMutation: bodyMut("<" + string(bytes.ToUpper(p.GetResponseBody().GetBody())) + ">")}))
			}
			pending = nil
			return out, nil
		}))
		cfg := testConfig()
		cfg.MessageTimeout = 500 * time.Millisecond
		cfg.MaxOutstandingChunks = 3
		resp := do(t, connect(fake), cfg, postRequest("{}"), sseUpstream("a", "b", "c", "d", "e"))
		require.Nil(t, resp.LocalReply)
		require.Equal(t, "<A><B><C><D><E>", string(resp.Body))
	})
}

// TestStreamedWindowOfOne: with the default window the client waits for each
// chunk's reply, so the same slow processor trips the message timer.
func TestStreamedWindowOfOne(t *testing.T) {
	var pending int
	fake := newFake(streamingOverride(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
		pending++
		if pending < 3 {
			return nil, nil
		}
		return one(reply(req, nil)), nil
	}))
	cfg := testConfig()
	cfg.MessageTimeout = 150 * time.Millisecond
	resp := do(t, GRPC(Direct(fake)), cfg, postRequest("{}"), sseUpstream("a", "b", "c"))
	require.True(t, resp.Reset) // the response had started downstream
	require.ErrorIs(t, resp.Failures[0], ErrMessageTimeout)
}

// TestServerCloseReleasesQueuedChunks: R1.9 with STREAMED chunks outstanding:
// they go out unmodified.
func TestServerCloseReleasesQueuedChunks(t *testing.T) {
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		n := 0
		fake := newFake(streamingOverride(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
			n++
			switch n {
			case 1:
				return one(reply(req, &extprocv3.CommonResponse{BodyMutation: bodyMut("A")})), nil
			case 2:
				return nil, nil
			default:
				return nil, errCloseOK
			}
		}))
		cfg := testConfig()
		cfg.MaxOutstandingChunks = 3
		resp := do(t, connect(fake), cfg, postRequest("{}"), sseUpstream("a", "b", "c", "d"))
		require.Nil(t, resp.LocalReply)
		require.False(t, resp.Reset)
		require.Equal(t, "Abcd", string(resp.Body))
		require.ErrorIs(t, resp.Failures[0], ErrProcessorClosed)
	})
}
