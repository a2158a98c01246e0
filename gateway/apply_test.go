package gateway_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tollgate-ai/tollgate/kernel"
	"github.com/tollgate-ai/tollgate/store"
)

// A model group added while the gateway serves is used by the processor only
// once the data plane has applied the configuration that routes to its
// deployment: the first request that the processor routes there reaches the
// provider, never the data plane's own 404 or 503 for a route or cluster it
// does not know yet. Over gRPC too, where the data plane is a separate xDS
// client like Envoy.
func TestNewDeploymentIsRoutedOnlyOnceTheDataPlaneHasIt(t *testing.T) {
	for _, overGRPC := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "grpc"}[overGRPC], func(t *testing.T) {
			r := start(t, overGRPC)
			key := r.key(t, "k", kernel.Limits{})
			r.warm(t, key, `{"model":"demo","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`)
			for i := range 10 {
				id := fmt.Sprintf("new%d", i)
				put(t, r.st, "p"+id, &store.Provider{ID: "p" + id, Type: store.ProviderOpenAI, BaseURL: r.mockURL + "/d/" + id + "/v1"})
				put(t, r.st, id, &store.Deployment{ID: id, Provider: "p" + id, ProviderModel: "mock-gpt"})
				put(t, r.st, "g"+id, &store.ModelGroup{ID: "g" + id, Deployments: []string{id}})
				body := `{"model":"g` + id + `","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
				eventually(t, func() bool {
					resp, b := r.post(t, key, "/v1/chat/completions", body)
					if resp.StatusCode == http.StatusNotFound && resp.Header.Get("x-tollgate-deployment") == "" {
						return false // the processor does not know the group yet
					}
					require.Equal(t, http.StatusOK, resp.StatusCode, "routed to %s: %s", resp.Header.Get("x-tollgate-deployment"), b)
					return true
				})
			}
		})
	}
}
