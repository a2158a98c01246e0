package extprocfilter_test

import (
	"testing"

	. "github.com/tollgate-ai/tollgate/edge/extprocfilter"
	. "github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/stretchr/testify/require"
)

// TestResponseReset: the built-in data plane's handling of an upstream reset
// mid-body (docs/extproc.md N4.7). In STREAMED mode one last empty body
// message with end_of_stream and the attribute response.code_details goes to
// the processor, whose body mutation ends the response instead of a reset; a
// processor that answers nothing leaves the reset to the caller. In BUFFERED
// mode nothing is sent.
func TestResponseReset(t *testing.T) {
	const event = "data: {\"error\":{}}\n\n"
	forEachTransport(t, func(t *testing.T, connect func(extprocv3.ExternalProcessorServer) Transport) {
		for _, answer := range []bool{true, false} {
			fake := newFake(func(req *extprocv3.ProcessingRequest) ([]*extprocv3.ProcessingResponse, error) {
				switch {
				case isResponseHeaders(req):
					r := reply(req, nil)
					r.ModeOverride = streamedResponseOverride()
					return one(r), nil
				case isResponseBody(req) && answer &&
					req.GetAttributes()["envoy.filters.http.ext_proc"].GetFields()[AttrCodeDetails].GetStringValue() == DetailsUpstreamReset:
					return one(reply(req, &extprocv3.CommonResponse{BodyMutation: bodyMut(event)})), nil
				}
				return continuer(req)
			})
			resp := do(t, connect(fake), testConfig(), postRequest("{}"), func(*ForwardedRequest) *UpstreamResponse {
				return &UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte("data: a\n\n")}, Reset: true, EdgeReset: true}
			})
			require.Equal(t, []string{"request_headers", "request_body", "response_headers", "response_body", "response_body"}, fake.kinds())
			last := fake.received()[4]
			require.True(t, last.GetResponseBody().GetEndOfStream())
			require.Empty(t, last.GetResponseBody().GetBody())
			if !answer {
				require.True(t, resp.Reset, "nothing to write: reset as Envoy does")
				continue
			}
			require.False(t, resp.Reset)
			require.Equal(t, "data: a\n\n"+event, string(resp.Body))
		}

		buffered := newFake(continuer)
		resp := do(t, connect(buffered), testConfig(), postRequest("{}"), func(*ForwardedRequest) *UpstreamResponse {
			return &UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte(`{"a":`)}, Reset: true, EdgeReset: true}
		})
		require.True(t, resp.Reset)
		require.Equal(t, []string{"request_headers", "request_body", "response_headers"}, buffered.kinds())
	})
}
