package extprocfilter_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocfilterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/require"
)

// reply answers req with the matching reply type carrying cr (nil: CONTINUE).
func reply(req *extprocv3.ProcessingRequest, cr *extprocv3.CommonResponse) *extprocv3.ProcessingResponse {
	if cr == nil {
		cr = &extprocv3.CommonResponse{}
	}
	switch req.GetRequest().(type) {
	case *extprocv3.ProcessingRequest_RequestHeaders:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_RequestBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_ResponseBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{Response: cr}}}
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{HeaderMutation: cr.GetHeaderMutation()}}}
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{HeaderMutation: cr.GetHeaderMutation()}}}
	}
	panic("unknown request")
}

func one(r *extprocv3.ProcessingResponse) []*extprocv3.ProcessingResponse {
	return []*extprocv3.ProcessingResponse{r}
}

// continuer is a correct processor that changes nothing.
func continuer(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
	return one(reply(req, nil)), nil
}

func rawSet(k, v string) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{Header: &corev3.HeaderValue{Key: k, RawValue: []byte(v)}}
}

func setHeaders(opts ...*corev3.HeaderValueOption) *extprocv3.HeaderMutation {
	return &extprocv3.HeaderMutation{SetHeaders: opts}
}

func bodyMut(b string) *extprocv3.BodyMutation {
	return &extprocv3.BodyMutation{Mutation: &extprocv3.BodyMutation_Body{Body: []byte(b)}}
}

func immediate(code typev3.StatusCode, body, det string, hm *extprocv3.HeaderMutation) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
		Status: &typev3.HttpStatus{Code: code}, Body: []byte(body), Details: det, Headers: hm,
	}}}
}

func isRequestHeaders(req *extprocv3.ProcessingRequest) bool { return req.GetRequestHeaders() != nil }
func isRequestBody(req *extprocv3.ProcessingRequest) bool    { return req.GetRequestBody() != nil }
func isResponseHeaders(req *extprocv3.ProcessingRequest) bool {
	return req.GetResponseHeaders() != nil
}
func isResponseBody(req *extprocv3.ProcessingRequest) bool { return req.GetResponseBody() != nil }

// testConfig is the production config with short timeouts.
func testConfig() Config {
	c := DefaultConfig()
	c.MessageTimeout = 2 * time.Second
	return c
}

func streamedResponseOverride() *extprocfilterv3.ProcessingMode {
	return &extprocfilterv3.ProcessingMode{
		RequestBodyMode:  extprocfilterv3.ProcessingMode_BUFFERED,
		ResponseBodyMode: extprocfilterv3.ProcessingMode_STREAMED,
	}
}

func postRequest(body ...string) *Request {
	r := &Request{Headers: Headers{
		{":method", "POST"},
		{":path", "/v1/chat/completions"},
		{":authority", "gw.local"},
		{":scheme", "http"},
		{"content-type", "application/json"},
	}}
	n := 0
	for _, b := range body {
		r.Body = append(r.Body, []byte(b))
		n += len(b)
	}
	if len(body) > 0 {
		r.Headers = append(r.Headers, Header{"content-length", itoa(n)})
	}
	return r
}

func getRequest() *Request {
	return &Request{Headers: Headers{{":method", "GET"}, {":path", "/v1/models"}, {":authority", "gw.local"}, {":scheme", "http"}}}
}

func itoa(n int) string { return strconv.Itoa(n) }

// ok200 is an upstream answering 200 with a JSON body in one chunk.
func ok200(body string) Upstream {
	return func(*ForwardedRequest) *UpstreamResponse {
		return &UpstreamResponse{Status: 200, Headers: Headers{{"content-type", "application/json"}, {"content-length", itoa(len(body))}}, Chunks: [][]byte{[]byte(body)}}
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func do(t *testing.T, tr Transport, cfg Config, req *Request, up Upstream) *Response {
	t.Helper()
	resp, err := Do(testCtx(t), NewClient(tr, cfg), req, up)
	require.NoError(t, err)
	return resp
}
