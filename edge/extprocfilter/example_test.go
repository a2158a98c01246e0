package extprocfilter_test

import (
	"context"
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
)

// router is a tiny processor: it routes on the request body reply, the way
// spec §6 asks, and continues everything else.
type router struct{}

func (router) Process(st extprocv3.ExternalProcessor_ProcessServer) error {
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		resp := &extprocv3.ProcessingResponse{}
		switch req.GetRequest().(type) {
		case *extprocv3.ProcessingRequest_RequestHeaders:
			resp.Response = &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{}}
		case *extprocv3.ProcessingRequest_RequestBody:
			resp.Response = &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{Response: &extprocv3.CommonResponse{
				HeaderMutation: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{
					{Header: &corev3.HeaderValue{Key: "x-tollgate-route", RawValue: []byte("dep-1")}},
				}},
				ClearRouteCache: true,
			}}}
		case *extprocv3.ProcessingRequest_ResponseHeaders:
			resp.Response = &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}
		case *extprocv3.ProcessingRequest_ResponseBody:
			resp.Response = &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}
		case *extprocv3.ProcessingRequest_ResponseTrailers:
			resp.Response = &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}
		}
		if err := st.Send(resp); err != nil {
			return err
		}
	}
}

func Example_do() {
	c := extprocfilter.NewClient(extprocfilter.GRPC(extprocfiltertest.Direct(router{})), extprocfilter.DefaultConfig())
	resp, err := extprocfiltertest.Do(context.Background(), c, &extprocfiltertest.Request{
		Headers: extprocfilter.Headers{{Key: ":method", Value: "POST"}, {Key: ":path", Value: "/v1/chat/completions"}},
		Body:    [][]byte{[]byte(`{"model":"gpt-4o"}`)},
	}, func(req *extprocfiltertest.ForwardedRequest) *extprocfiltertest.UpstreamResponse {
		return &extprocfiltertest.UpstreamResponse{Status: 200, Chunks: [][]byte{[]byte("routed to " + req.Headers.Value("x-tollgate-route"))}}
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Status, string(resp.Body), resp.Forwarded.ClearRouteCache)
	// Output: 200 routed to dep-1 true
}

func ExampleStream() {
	c := extprocfilter.NewClient(extprocfilter.GRPC(extprocfiltertest.Direct(router{})), extprocfilter.DefaultConfig())
	s := c.Start(context.Background())
	defer s.Close()
	r, _ := s.RequestHeaders(extprocfilter.Headers{{Key: ":method", Value: "POST"}, {Key: ":path", Value: "/v1/embeddings"}}, false)
	fmt.Println("after headers, released:", r.Continue)
	r, _ = s.RequestBody([]byte(`{"model":"m"}`), true)
	fmt.Println("after body, released:", r.Continue, r.Headers.Value("x-tollgate-route"), string(r.Body))
	// Output:
	// after headers, released: false
	// after body, released: true dep-1 {"model":"m"}
}
