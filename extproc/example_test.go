package extproc

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/tollgate-ai/tollgate/edge/extprocfilter"
	"github.com/tollgate-ai/tollgate/edge/extprocfilter/extprocfiltertest"
)

// Example serves the processor on a loopback listener and drives it with the
// Envoy-faithful client, in process, as the built-in data plane does.
func Example() {
	cat := newCatalog()             // a Catalog: keys, models, deployments
	acct := newStateAccountant(nil) // an Accountant: admission and settlement
	p := New(cat, acct, WithRequestIDs(func() string { return "req-1" }))

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, lis) }() // Envoy connects to lis.Addr()

	client := extprocfilter.NewClient(extprocfilter.GRPC(extprocfiltertest.Direct(p)), extprocfilter.DefaultConfig())
	resp, err := extprocfiltertest.Do(ctx, client, &extprocfiltertest.Request{Headers: extprocfilter.Headers{
		{Key: ":method", Value: "GET"},
		{Key: ":path", Value: "/v1/models"},
		{Key: ":authority", Value: "gw"},
		{Key: ":scheme", Value: "https"},
		{Key: "authorization", Value: "Bearer " + otherKey},
	}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, resp.Headers.Value("x-tollgate-request-id"))
	fmt.Println(string(resp.Body))

	stop()
	select {
	case err := <-done:
		fmt.Println("stopped:", err)
	case <-time.After(5 * time.Second):
	}
	// Output:
	// 200 req-1
	// {"object":"list","data":[{"id":"gpt-4o","object":"model","created":1700000000,"owned_by":"acme"}]}
	// stopped: <nil>
}
